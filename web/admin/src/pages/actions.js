import { h, field, alertBox, pretty } from '../dom.js';
import { callAPI } from '../api.js';

// Which fields each method uses, and how the params are built from them.
const methods = {
  publish: {
    fields: ['channel', 'data', 'tags'],
    params: (v) => ({ channel: v.channel, data: v.data, ...(v.tags ? { tags: v.tags } : {}) }),
    help: 'Publish data into a channel.',
  },
  broadcast: {
    fields: ['channels', 'data', 'tags'],
    params: (v) => ({ channels: v.channels, data: v.data, ...(v.tags ? { tags: v.tags } : {}) }),
    help: 'Publish the same data into several channels.',
  },
  disconnect: {
    fields: ['user'],
    params: (v) => ({ user: v.user }),
    help: 'Disconnect every connection of a user.',
  },
  unsubscribe: {
    fields: ['user', 'channel'],
    params: (v) => ({ user: v.user, channel: v.channel }),
    help: 'Unsubscribe a user from a channel.',
  },
  history_remove: {
    fields: ['channel'],
    params: (v) => ({ channel: v.channel }),
    help: "Remove a channel's history.",
  },
};

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
  const method = field(
    'Method',
    h('select', { name: 'method' }, Object.keys(methods).map((m) => h('option', { value: m, text: m }))),
  );
  // One input serves as "Channel" and, for broadcast, "Channels" (comma separated), so
  // that a value typed before switching the method is kept.
  const channel = field('Channel', h('input', { type: 'text', name: 'channel', autocomplete: 'off', spellcheck: 'false' }), 'Comma separated.');
  const channelLabel = channel.wrap.querySelector('label');
  const channelHint = channel.wrap.querySelector('.hint');
  const user = field('User', h('input', { type: 'text', name: 'user', autocomplete: 'off', spellcheck: 'false' }));
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
  const fieldsByName = { channel, user, data, tags };

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
      data: jsonError(data.input.value) ? undefined : JSON.parse(data.input.value),
      tags: tagResult.tags,
    };
  }

  // validate marks the visible fields; returns the first problem, or "".
  function validate() {
    const spec = methods[method.input.value];
    const problems = [];
    const mark = (f, statusEl, message) => {
      f.input.setAttribute('aria-invalid', message ? 'true' : 'false');
      if (statusEl) {
        statusEl.textContent = message || (f === data ? 'Valid JSON.' : '');
        statusEl.className = `validity ${message ? 'bad' : 'ok'}`;
      }
      if (message) problems.push(message);
    };
    if (spec.fields.includes('data')) mark(data, dataStatus, jsonError(data.input.value));
    if (spec.fields.includes('tags')) {
      mark(tags, tagsStatus, parseTags(tags.input.value).error || '');
    }
    channel.input.removeAttribute('aria-invalid');
    user.input.removeAttribute('aria-invalid');
    return problems[0] || '';
  }

  function body() {
    const spec = methods[method.input.value];
    return { method: method.input.value, params: spec.params(values()) };
  }

  function update() {
    const spec = methods[method.input.value];
    const broadcast = spec.fields.includes('channels');
    for (const [name, f] of Object.entries(fieldsByName)) f.wrap.hidden = !spec.fields.includes(name) && !(name === 'channel' && broadcast);
    channelLabel.textContent = broadcast ? 'Channels' : 'Channel';
    channelHint.hidden = !broadcast;
    help.textContent = spec.help;
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
    const spec = methods[method.input.value];
    for (const name of spec.fields) {
      if (['channel', 'user'].includes(name) && !fieldsByName[name].input.value.trim()) {
        const label = name === 'channel' ? 'Channel' : 'User';
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
  return () => {};
}
