import { h, field, alertBox, pretty } from '../dom.js';
import { callAPI, request } from '../api.js';

/**
 * buildParams makes the params of a method from the form's values: each of
 * the method's fields (as the methods route lists them) taken as it is,
 * except tags, which are left out when there are none.
 */
export function buildParams(fields, v) {
  const params = {};
  for (const name of fields) {
    if (name === 'tags' && !v.tags) continue;
    params[name] = v[name];
  }
  return params;
}

/** parseTags reads key=value lines; returns {tags} or {error}. */
export function parseTags(text) {
  const tags = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i].trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) return { error: `Line ${i + 1}: write key=value.` };
    tags[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return { tags: Object.keys(tags).length ? tags : null };
}

/** jsonError says where a JSON text is wrong, or returns "" when it parses. */
export function jsonError(text) {
  try {
    JSON.parse(text);
    return '';
  } catch (err) {
    const m = /position (\d+)/.exec(err.message);
    if (m) {
      const pos = Number(m[1]);
      const before = text.slice(0, pos);
      const line = before.split('\n').length;
      const col = pos - before.lastIndexOf('\n');
      return `Invalid JSON at line ${line}, column ${col}: ${err.message}`;
    }
    return `Invalid JSON: ${err.message}`;
  }
}

/** actionsPage sends API methods through admin/api and shows the raw reply. */
export function actionsPage(main, ctx, presetChannel) {
  const alert = alertBox();
  // The methods come from the server (admin/methods, read from the API's
  // method table); the select stays disabled until they are there.
  let methods = {};
  const spec = () => methods[method.input.value] || { fields: [], help: '' };
  const method = field('Method', h('select', { name: 'method', disabled: true }));
  // One input serves as "Channel" and, for broadcast, "Channels" (comma separated), so
  // that a value typed before switching the method is kept.
  const channel = field('Channel', h('input', { type: 'text', name: 'channel', autocomplete: 'off', spellcheck: 'false' }), 'Comma separated.');
  const channelLabel = channel.wrap.querySelector('label');
  const channelHint = channel.wrap.querySelector('.hint');
  const user = field('User', h('input', { type: 'text', name: 'user', autocomplete: 'off', spellcheck: 'false' }));
  const key = field('Key', h('input', { type: 'text', name: 'key', autocomplete: 'off', spellcheck: 'false' }));
  const data = field(
    'Data',
    h('textarea', { name: 'data', rows: 6, class: 'code', spellcheck: 'false', value: '{\n  "text": "hello"\n}' }),
    'JSON, checked as you type.',
  );
  const dataStatus = h('p', { class: 'validity', id: `${data.input.id}-status` });
  data.wrap.append(dataStatus);
  data.input.setAttribute('aria-describedby', `${data.input.id}-hint ${dataStatus.id}`);
  const tags = field('Tags', h('textarea', { name: 'tags', rows: 3, class: 'code', spellcheck: 'false' }), 'One key=value per line.');
  const tagsStatus = h('p', { class: 'validity', id: `${tags.input.id}-status` });
  tags.wrap.append(tagsStatus);
  tags.input.setAttribute('aria-describedby', `${tags.input.id}-hint ${tagsStatus.id}`);
  const help = h('p', { class: 'muted' });
  const send = h('button', { type: 'submit', text: 'Send' });
  const fieldsByName = { channel, user, key, data, tags };

  const requestView = h('pre', { class: 'json small-json' });
  const replyView = h('pre', { class: 'json', text: 'Nothing sent yet.' });
  const replyStatus = h('p', { class: 'reply-status' });
  const reply = h('section', { class: 'card', role: 'region', 'aria-label': 'Reply', 'aria-live': 'polite' }, h('h2', { text: 'Reply' }), replyStatus, replyView);

  const form = h(
    'form',
    { class: 'card form', onsubmit: submit, novalidate: true },
    method.wrap,
    help,
    channel.wrap,
    user.wrap,
    key.wrap,
    data.wrap,
    tags.wrap,
    alert.el,
    h('details', {}, h('summary', { text: 'Request body' }), requestView),
    h('div', { class: 'buttons' }, send),
  );

  function values() {
    const tagResult = parseTags(tags.input.value);
    return {
      channel: channel.input.value.trim(),
      channels: channel.input.value.split(',').map((s) => s.trim()).filter(Boolean),
      user: user.input.value.trim(),
      key: key.input.value,
      data: jsonError(data.input.value) ? undefined : JSON.parse(data.input.value),
      tags: tagResult.tags,
    };
  }

  // validate marks the visible fields; returns the first problem, or "".
  function validate() {
    const { fields } = spec();
    const problems = [];
    const mark = (f, statusEl, message) => {
      f.input.setAttribute('aria-invalid', message ? 'true' : 'false');
      if (statusEl) {
        statusEl.textContent = message || (f === data ? 'Valid JSON.' : '');
        statusEl.className = `validity ${message ? 'bad' : 'ok'}`;
      }
      if (message) problems.push(message);
    };
    if (fields.includes('data')) mark(data, dataStatus, jsonError(data.input.value));
    if (fields.includes('tags')) {
      mark(tags, tagsStatus, parseTags(tags.input.value).error || '');
    }
    channel.input.removeAttribute('aria-invalid');
    user.input.removeAttribute('aria-invalid');
    key.input.removeAttribute('aria-invalid');
    return problems[0] || '';
  }

  function body() {
    return { method: method.input.value, params: buildParams(spec().fields, values()) };
  }

  function update() {
    const { fields, help: text } = spec();
    const broadcast = fields.includes('channels');
    for (const [name, f] of Object.entries(fieldsByName)) f.wrap.hidden = !fields.includes(name) && !(name === 'channel' && broadcast);
    channelLabel.textContent = broadcast ? 'Channels' : 'Channel';
    channelHint.hidden = !broadcast;
    help.textContent = text;
    const problem = validate();
    requestView.textContent = problem ? problem : pretty(body());
  }

  async function submit(event) {
    event.preventDefault();
    alert.clear();
    const problem = validate();
    if (problem) {
      alert.show(problem);
      return;
    }
    if (!methods[method.input.value]) {
      alert.show('The methods have not been loaded yet.');
      return;
    }
    for (const name of spec().fields) {
      if (['channel', 'user', 'key'].includes(name) && !fieldsByName[name].input.value.trim()) {
        const label = { channel: 'Channel', user: 'User', key: 'Key' }[name];
        fieldsByName[name].input.setAttribute('aria-invalid', 'true');
        alert.show(`${label} is required for ${method.input.value}.`);
        fieldsByName[name].input.focus();
        return;
      }
      if (name === 'channels' && !values().channels.length) {
        channel.input.setAttribute('aria-invalid', 'true');
        alert.show('Channels: give at least one channel.');
        channel.input.focus();
        return;
      }
    }
    const req = body();
    send.disabled = true;
    replyStatus.textContent = `Sending ${req.method}…`;
    try {
      const answer = await callAPI(req.method, req.params);
      replyView.textContent = pretty(answer);
      const failed = answer && answer.error;
      replyStatus.textContent = failed ? `${req.method} failed.` : `${req.method} done.`;
      replyStatus.className = `reply-status ${failed ? 'bad' : 'ok'}`;
    } catch (err) {
      replyView.textContent = err.body ? pretty(err.body) : err.message;
      replyStatus.textContent = `${req.method} failed: ${err.message}`;
      replyStatus.className = 'reply-status bad';
    } finally {
      send.disabled = false;
    }
  }

  if (presetChannel) channel.input.value = presetChannel;
  form.addEventListener('input', update);
  form.addEventListener('change', update);
  main.append(
    h('h1', { text: 'Actions' }),
    h('p', { class: 'muted', text: 'Run a server API method through the admin route; the raw reply is shown below.' }),
    h('div', { class: 'two-col' }, form, reply),
  );
  update();
  const loading = new AbortController();
  request('admin/methods', { signal: loading.signal })
    .then((answer) => {
      methods = {};
      for (const m of (answer && answer.methods) || []) methods[m.name] = { fields: m.fields, help: m.summary };
      method.input.replaceChildren(...Object.keys(methods).map((m) => h('option', { value: m, text: m })));
      method.input.disabled = false;
      update();
    })
    .catch((err) => {
      if (err.name !== 'AbortError') alert.show(`The methods cannot be loaded: ${err.message}`);
    });
  return () => loading.abort();
}
