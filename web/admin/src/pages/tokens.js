import { h, field, alertBox } from '../dom.js';
import { request } from '../api.js';
import { jsonError } from './actions.js';

/** tokensPage makes connection and subscription tokens for testing (admin/token). */
export function tokensPage(main, ctx) {
  main.append(h('h1', { text: 'Tokens' }));
  if (ctx.init && ctx.init.tokens === false) {
    main.append(
      h(
        'div',
        { class: 'card notice', role: 'note' },
        h('h2', { text: 'No HMAC key is configured' }),
        h('p', {}, 'Tokens cannot be generated here because the server has no HMAC key: set ', h('code', { text: 'client.token.hmac_secret_key' }), ' in the configuration and restart. Tokens signed with RSA or ECDSA keys, or checked through JWKS, must come from your backend.'),
      ),
    );
    return () => {};
  }

  const alert = alertBox();
  const kind = field('Token kind', h('select', { name: 'kind' }, h('option', { value: 'connection', text: 'connection' }), h('option', { value: 'subscription', text: 'subscription' })));
  const user = field('User', h('input', { type: 'text', name: 'user', autocomplete: 'off', spellcheck: 'false' }), 'Empty for an anonymous connection.');
  const channel = field('Channel', h('input', { type: 'text', name: 'channel', autocomplete: 'off', spellcheck: 'false' }));
  const ttl = field('Expires in (seconds)', h('input', { type: 'number', name: 'ttl', min: 1, value: '3600', inputmode: 'numeric' }));
  const info = field('Info (JSON, optional)', h('textarea', { name: 'info', rows: 3, class: 'code', spellcheck: 'false' }));
  const generate = h('button', { type: 'submit', text: 'Generate' });
  const form = h('form', { class: 'card form', onsubmit: submit, novalidate: true }, kind.wrap, user.wrap, channel.wrap, ttl.wrap, info.wrap, alert.el, h('div', { class: 'buttons' }, generate));

  const tokenText = h('code', { class: 'token', text: 'Nothing generated yet.' });
  const copied = h('span', { class: 'muted small', 'aria-live': 'polite' });
  const copy = h('button', { type: 'button', class: 'secondary', text: 'Copy', disabled: true, onclick: doCopy });
  const out = h('section', { class: 'card', role: 'region', 'aria-label': 'Token', 'aria-live': 'polite' }, h('h2', { text: 'Token' }), h('p', { class: 'token-box' }, tokenText), h('div', { class: 'buttons' }, copy, copied));

  function update() {
    channel.wrap.hidden = kind.input.value !== 'subscription';
  }

  async function submit(event) {
    event.preventDefault();
    alert.clear();
    const req = { kind: kind.input.value, user: user.input.value.trim(), ttl_seconds: Number(ttl.input.value) || 0 };
    if (req.kind === 'subscription') {
      req.channel = channel.input.value.trim();
      if (!req.channel) {
        alert.show('Channel is required for a subscription token.');
        channel.input.focus();
        return;
      }
    }
    if (info.input.value.trim()) {
      const problem = jsonError(info.input.value);
      if (problem) {
        alert.show(`Info: ${problem}`);
        return;
      }
      req.info = JSON.parse(info.input.value);
    }
    generate.disabled = true;
    // The previous token goes at once, so that nobody copies it for the new one.
    tokenText.textContent = 'Generating…';
    copy.disabled = true;
    copied.textContent = '';
    try {
      const reply = await request('admin/token', { method: 'POST', json: req });
      tokenText.textContent = reply.token;
      copy.disabled = false;
      copied.textContent = '';
    } catch (err) {
      tokenText.textContent = 'No token: the request failed.';
      alert.show(err.message);
    } finally {
      generate.disabled = false;
    }
  }

  async function doCopy() {
    try {
      await navigator.clipboard.writeText(tokenText.textContent);
      copied.textContent = 'Copied.';
    } catch {
      const range = document.createRange();
      range.selectNodeContents(tokenText);
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      copied.textContent = 'Selected: press Ctrl+C to copy.';
    }
  }

  kind.input.addEventListener('change', update);
  update();
  main.append(
    h('p', { class: 'muted', text: 'Generate a connection or subscription token for testing, signed with the configured HMAC key (the key itself never leaves the server).' }),
    h('div', { class: 'two-col' }, form, out),
  );
  return () => {};
}
