import { h, field, alertBox, pretty, scrollTable } from '../dom.js';
import { apiResult, url, getToken } from '../api.js';
import { count, time } from '../format.js';

function channelHref(name) {
  return `#/channels/${encodeURIComponent(name)}`;
}

/** channelsPage lists the cluster's channels (API channels), filtered by a pattern. */
export function channelsPage(main) {
  const alert = alertBox();
  const search = field(
    'Search channels',
    h('input', { type: 'search', name: 'pattern', autocomplete: 'off', placeholder: 'chat:*' }),
    'A channel name or a pattern: * matches any run of characters.',
  );
  const tbody = h('tbody');
  const table = h(
    'table',
    {},
    h('caption', { text: 'Channels' }),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Channel' }), h('th', { scope: 'col', class: 'num', text: 'Subscribers' }))),
    tbody,
  );
  const summary = h('p', { class: 'muted small', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'inline-form', role: 'search', onsubmit: (e) => { e.preventDefault(); load(); } },
    search.wrap,
    h('button', { type: 'submit', text: 'Search' }),
  );
  main.append(h('h1', { text: 'Channels' }), form, alert.el, summary, scrollTable(table, 'Channels table'));

  let seq = 0;
  let debounce = null;
  search.input.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(load, 300);
  });

  async function load() {
    const mine = ++seq;
    const pattern = search.input.value.trim();
    try {
      const result = await apiResult('channels', pattern ? { pattern } : {});
      if (mine !== seq) return;
      const entries = Object.entries(result.channels || {}).sort(([a], [b]) => a.localeCompare(b));
      tbody.replaceChildren(
        ...(entries.length
          ? entries.map(([name, info]) =>
              h('tr', {}, h('td', {}, h('a', { href: channelHref(name), text: name })), h('td', { class: 'num', text: count(info.num_clients) })),
            )
          : [h('tr', {}, h('td', { colspan: 2, text: pattern ? `No channel matches ${pattern}.` : 'No channel has subscribers.' }))]),
      );
      summary.textContent = `${entries.length} channel${entries.length === 1 ? '' : 's'}${pattern ? ` matching ${pattern}` : ''}.`;
      alert.clear();
    } catch (err) {
      if (mine === seq) alert.show(`Cannot list the channels: ${err.message}`);
    }
  }
  load();
  return () => {
    clearTimeout(debounce);
    seq += 1;
  };
}

const PAGE_SIZE = 10;

// compact prints short JSON on one line and longer JSON indented.
export function compact(value) {
  const line = JSON.stringify(value);
  return line !== undefined && line.length <= 100 ? line : pretty(value);
}

function pubItem(pub) {
  const tags = Object.entries(pub.tags || {});
  const who = pub.info && (pub.info.user || pub.info.client) ? `from ${pub.info.user || '(anonymous)'}${pub.info.client ? ` · ${pub.info.client}` : ''}` : '';
  return h(
    'li',
    { class: 'pub' },
    h(
      'div',
      { class: 'pub-meta' },
      pub.offset !== undefined ? h('span', { class: 'offset', text: `#${pub.offset}` }) : null,
      pub.time_ms ? h('span', { text: time(pub.time_ms) }) : null,
      who ? h('span', { text: who }) : null,
    ),
    h('pre', { class: 'json', text: compact(pub.data) }),
    tags.length
      ? h('p', { class: 'tags' }, h('span', { class: 'sr-only', text: 'Tags: ' }), tags.map(([k, v]) => h('span', { class: 'tag', text: `${k}=${v}` })))
      : null,
  );
}

/** channelPage shows one channel: presence, paged history and the live tail. */
export function channelPage(main, ctx, channel) {
  const cleanups = [];
  main.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/channels', text: 'Channels' }), ' / '),
    h('h1', { class: 'channel-name', text: channel }),
    h('p', {}, h('a', { href: `#/actions/${encodeURIComponent(channel)}`, text: 'Publish into this channel' })),
    h('div', { class: 'grid' }, presenceSection(channel, cleanups), tailSection(channel, cleanups), historySection(channel, cleanups)),
  );
  return () => cleanups.forEach((fn) => fn());
}

const PRESENCE_REFRESH_MS = 5000;

function presenceSection(channel, cleanups) {
  const alert = alertBox();
  const tbody = h('tbody');
  const table = h(
    'table',
    {},
    h('caption', { class: 'sr-only', text: 'Presence' }),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'User' }), h('th', { scope: 'col', text: 'Client' }), h('th', { scope: 'col', text: 'Info' }))),
    tbody,
  );
  const refresh = h('button', { type: 'button', class: 'secondary', text: 'Refresh presence', onclick: load });
  const headingId = 'presence-heading';
  const section = h(
    'section',
    { class: 'card', 'aria-labelledby': headingId },
    h('div', { class: 'section-head' }, h('h2', { id: headingId, text: 'Presence' }), refresh),
    h('p', { class: 'muted small', text: 'Refreshed every 5 seconds.' }),
    alert.el,
    scrollTable(table, 'Presence table'),
  );
  async function load() {
    try {
      const result = await apiResult('presence', { channel });
      const clients = Object.values(result.presence || {});
      tbody.replaceChildren(
        ...(clients.length
          ? clients.map((c) =>
              h(
                'tr',
                {},
                h('td', { text: c.user || '(anonymous)' }),
                h('td', { class: 'mono', text: c.client }),
                h('td', { class: 'mono', text: c.conn_info || c.chan_info ? JSON.stringify({ conn_info: c.conn_info, chan_info: c.chan_info }) : '' }),
              ),
            )
          : [h('tr', {}, h('td', { colspan: 3, text: 'Nobody is subscribed.' }))]),
      );
      alert.clear();
    } catch (err) {
      alert.show(`Presence: ${err.message}`);
      tbody.replaceChildren();
    }
  }
  load();
  const timer = setInterval(load, PRESENCE_REFRESH_MS);
  cleanups.push(() => clearInterval(timer));
  return section;
}

function historySection(channel) {
  const alert = alertBox();
  const list = h('ol', { class: 'pubs', 'aria-label': 'History', reversed: true });
  const status = h('p', { class: 'muted small', 'aria-live': 'polite' });
  const newer = h('button', { type: 'button', class: 'secondary', text: 'Newer', onclick: () => page('newer') });
  const older = h('button', { type: 'button', class: 'secondary', text: 'Older', onclick: () => page('older') });
  const latest = h('button', { type: 'button', class: 'secondary', text: 'Latest', onclick: () => page('latest') });
  const section = h(
    'section',
    { class: 'card wide', 'aria-labelledby': 'history-heading' },
    h('div', { class: 'section-head' }, h('h2', { id: 'history-heading', text: 'History' }), h('div', { class: 'buttons' }, latest, newer, older)),
    alert.el,
    status,
    list,
  );

  // The page shown: newest first. top is the stream's latest offset.
  let shown = [];
  let epoch = '';
  let top = 0;

  async function page(which) {
    const params = { channel, limit: PAGE_SIZE, reverse: true };
    if (which === 'older' && shown.length) {
      params.since = { offset: shown[shown.length - 1].offset, epoch };
    } else if (which === 'newer' && shown.length) {
      params.since = { offset: shown[0].offset, epoch };
      params.reverse = false;
    }
    try {
      const result = await apiResult('history', params);
      let pubs = result.publications || [];
      if (!params.reverse) pubs = pubs.slice().reverse();
      if (result.epoch && epoch && result.epoch !== epoch && which !== 'latest') {
        // The stream was reset: start again from its newest end.
        epoch = result.epoch;
        return page('latest');
      }
      epoch = result.epoch || '';
      top = Number(result.offset || 0);
      if (pubs.length || which === 'latest') shown = pubs;
      list.replaceChildren(...shown.map(pubItem));
      const hi = shown.length ? Number(shown[0].offset) : 0;
      const lo = shown.length ? Number(shown[shown.length - 1].offset) : 0;
      newer.disabled = !shown.length || hi >= top;
      older.disabled = !shown.length || lo <= 1 || (which === 'older' && pubs.length < PAGE_SIZE);
      status.textContent = shown.length
        ? `Offsets ${lo}–${hi} of ${top}${epoch ? `, epoch ${epoch}` : ''}.`
        : 'No history (the channel keeps none, or nothing was published).';
      alert.clear();
    } catch (err) {
      alert.show(`History: ${err.message}`);
    }
  }
  page('latest');
  return section;
}

function tailSection(channel, cleanups) {
  const alert = alertBox();
  const list = h('ul', { class: 'pubs tail', 'aria-label': 'Live tail', 'aria-live': 'polite', 'aria-relevant': 'additions' });
  const state = h('span', { class: 'pill', text: 'Connecting' });
  let paused = false;
  const pause = h('button', {
    type: 'button',
    class: 'secondary',
    'aria-pressed': 'false',
    text: 'Pause',
    onclick: () => {
      paused = !paused;
      pause.setAttribute('aria-pressed', String(paused));
    },
  });
  const clear = h('button', { type: 'button', class: 'secondary', text: 'Clear', onclick: () => list.replaceChildren() });
  const section = h(
    'section',
    { class: 'card', 'aria-labelledby': 'tail-heading' },
    h('div', { class: 'section-head' }, h('h2', { id: 'tail-heading', text: 'Live tail' }), state, h('div', { class: 'buttons' }, pause, clear)),
    alert.el,
    h('p', { class: 'muted small', text: 'Publications into this channel, from any node, as they arrive (newest first, last 100 kept).' }),
    list,
  );

  const params = new URLSearchParams({ channel });
  const token = getToken();
  if (token) params.set('token', token);
  const source = new EventSource(url(`admin/tail?${params}`));
  const setState = (text, cls) => {
    state.textContent = text;
    state.className = `pill ${cls}`;
  };
  source.onopen = () => {
    setState('Live', 'ok');
    alert.clear();
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      setState('Closed', 'bad');
      alert.show('The live tail was refused or closed by the server.');
    } else {
      setState('Reconnecting', 'warn');
    }
  };
  source.addEventListener('publication', (event) => {
    if (paused) return;
    let pub;
    try {
      pub = JSON.parse(event.data);
    } catch {
      pub = { data: event.data };
    }
    list.prepend(pubItem(pub));
    while (list.children.length > 100) list.lastElementChild.remove();
  });
  cleanups.push(() => source.close());
  return section;
}
