import { h, field, alertBox } from '../dom.js';
import { request } from '../api.js';

/** loginPage renders the password form; onLogin gets the token from admin/auth. */
export function loginPage(main, { onLogin, notice }) {
  const alert = alertBox();
  const password = field(
    'Password',
    h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true }),
  );
  const button = h('button', { type: 'submit', text: 'Log in' });
  const form = h('form', { class: 'card login', onsubmit: submit }, password.wrap, alert.el, button);

  async function submit(event) {
    event.preventDefault();
    alert.clear();
    button.disabled = true;
    try {
      const reply = await request('admin/auth', { method: 'POST', form: { password: password.input.value } });
      if (!reply || !reply.token) throw new Error('The server sent no token.');
      await onLogin(reply.token);
    } catch (err) {
      if (err.status === 400) alert.show('Wrong password');
      else if (err.status === 429) {
        const wait = err.retryAfter ? ` Try again in ${err.retryAfter} seconds.` : ' Try again later.';
        alert.show(`Too many attempts.${wait}`);
      } else alert.show(err.message);
      button.disabled = false;
      password.input.select();
    }
  }

  main.append(
    h(
      'div',
      { class: 'login-wrap' },
      h('div', { class: 'brand big' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), h('span', { text: 'Gyre admin' })),
      h('h1', { text: 'Log in' }),
      form,
    ),
  );
  if (notice) alert.show(notice);
  password.input.focus();
  return () => {};
}
