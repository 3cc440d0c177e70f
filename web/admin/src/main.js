// Gyre admin: the shell (header, navigation, hash router) and the session.
import './style.css';
import { h } from './dom.js';
import { request, setToken, getToken, setUnauthorizedHandler } from './api.js';
import { loginPage } from './pages/login.js';
import { statusPage } from './pages/status.js';
import { channelsPage, channelPage } from './pages/channels.js';
import { actionsPage } from './pages/actions.js';
import { filtersPage } from './pages/filters.js';
import { tokensPage } from './pages/tokens.js';
import { hooksPage } from './pages/hooks.js';

// Routes live in the URL's fragment (#/channels), so the app works under any
// handler_prefix and the server only ever serves PREFIX/ itself as a page.
const routes = [
  { path: 'status', label: 'Status', page: statusPage },
  { path: 'channels', label: 'Channels', page: channelsPage },
  { path: 'hooks', label: 'Event hooks', page: hooksPage },
  { path: 'actions', label: 'Actions', page: actionsPage },
  { path: 'filters', label: 'Filters', page: filtersPage },
  { path: 'tokens', label: 'Tokens', page: tokensPage },
];

const state = {
  init: null, // the last /admin/init answer
  cleanup: null, // stops the current page's timers and streams
  loginNotice: '',
};

const root = document.getElementById('app');

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [name, ...rest] = raw.split('/');
  return { name: name || 'status', arg: rest.length ? decodeURIComponent(rest.join('/')) : '' };
}

function loggedIn() {
  return Boolean(state.init && (state.init.insecure || getToken()));
}

function stopPage() {
  if (state.cleanup) {
    try {
      state.cleanup();
    } catch (err) {
      console.error(err);
    }
    state.cleanup = null;
  }
}

function header(current) {
  const nav = h(
    'nav',
    { 'aria-label': 'Main' },
    h(
      'ul',
      {},
      routes.map((r) =>
        h('li', {}, h('a', { href: `#/${r.path}`, 'aria-current': r.path === current ? 'page' : undefined, text: r.label })),
      ),
    ),
    state.init && state.init.insecure
      ? h('span', { class: 'badge', title: 'admin.insecure is on: no login needed', text: 'Insecure mode' })
      : h('button', { type: 'button', class: 'secondary', onclick: logout, text: 'Log out' }),
  );
  const info = state.init || {};
  return h(
    'header',
    { class: 'top' },
    h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), h('span', { text: 'Gyre admin' })),
    info.node_name ? h('span', { class: 'node', text: `${info.node_name} · ${info.version || ''}` }) : null,
    nav,
  );
}

function render() {
  stopPage();
  const { name, arg } = parseHash();
  const skip = h('a', { class: 'skip', href: '#content', text: 'Skip to content', onclick: skipToContent });
  const main = h('main', { id: 'content', tabindex: '-1' });
  if (!loggedIn()) {
    root.replaceChildren(skip, main);
    state.cleanup = loginPage(main, { onLogin, notice: state.loginNotice });
    state.loginNotice = '';
    document.title = 'Log in · Gyre admin';
    return;
  }
  const route = routes.find((r) => r.path === name) || routes[0];
  root.replaceChildren(skip, header(route.path), main);
  const ctx = { init: state.init };
  if (route.path === 'channels' && arg) {
    state.cleanup = channelPage(main, ctx, arg);
    document.title = `${arg} · Channels · Gyre admin`;
  } else {
    state.cleanup = route.page(main, ctx, arg);
    document.title = `${route.label} · Gyre admin`;
  }
  const heading = main.querySelector('h1');
  if (heading && navigatedByUser) {
    heading.setAttribute('tabindex', '-1');
    heading.focus();
  }
  navigatedByUser = true;
}

let navigatedByUser = false;

function skipToContent(event) {
  event.preventDefault();
  const main = document.getElementById('content');
  if (main) main.focus();
}

async function loadInit() {
  try {
    state.init = await request('admin/init');
  } catch (err) {
    state.init = { insecure: false, tokens: false };
    if (err.status !== 401) state.loginNotice = `The server did not answer admin/init: ${err.message}`;
  }
  if (state.init && !state.init.insecure && !state.init.authenticated) setToken('');
}

async function onLogin(token) {
  setToken(token);
  await loadInit();
  navigatedByUser = false;
  if (!location.hash || location.hash === '#/login') location.hash = '#/status';
  else render();
}

function logout() {
  setToken('');
  location.hash = '#/status';
  render();
}

setUnauthorizedHandler(() => {
  if (state.init && state.init.insecure) return;
  const wasLoggedIn = Boolean(getToken());
  setToken('');
  state.loginNotice = wasLoggedIn ? 'Your session has ended; log in again.' : '';
  // Re-render outside the failing call's stack so that the page's own error handling finishes first.
  setTimeout(render, 0);
});

window.addEventListener('hashchange', render);

loadInit().then(render);
