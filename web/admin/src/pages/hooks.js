// The Event hooks page: the queues of the event hook proxies (channel state
// and user status events) of the node the app is served by, from
// admin/event_hooks, with their counts and latest events and failures. Each
// node reports its own: every node delivers the events it is handed.
import { h, alertBox, scrollTable } from '../dom.js';
import { request } from '../api.js';
import { count, time } from '../format.js';

const REFRESH_MS = 2000;

export const columns = ['Time', 'Outcome', 'Event', 'Channel or user', 'Event ID', 'Batch', 'Attempt', 'Reason'];

const outcomeTones = { delivered: 'ok', failed: 'warn', dropped: 'bad' };

/** outcomeTone is the pill class of a record's outcome. */
export function outcomeTone(outcome) {
  return outcomeTones[outcome] || '';
}

/**
 * queueState is how a proxy is doing, from its newest record: failing while
 * its latest request failed, dropping while its latest event was dropped.
 */
export function queueState(q) {
  const newest = (q.recent || [])[0];
  if (!newest) return { label: 'No events yet', tone: '' };
  if (newest.outcome === 'failed') return { label: 'Failing', tone: 'bad' };
  if (newest.outcome === 'dropped') return { label: 'Dropping', tone: 'bad' };
  return { label: 'Delivering', tone: 'ok' };
}

/** carries says which events a proxy gets, in words. */
export function carries(q) {
  const kinds = q.kinds || [];
  const parts = [];
  if (kinds.includes('channel')) {
    const ns = (q.namespaces || []).map((n) => (n === '' ? 'channels without namespace' : n));
    parts.push(ns.length ? `channel state events (${ns.join(', ')})` : 'channel state events');
  }
  if (kinds.includes('user')) parts.push('user status events');
  if (!parts.length) return 'No events.';
  const text = parts.join(' and ');
  return `${text[0].toUpperCase()}${text.slice(1)}.`;
}

const dropReasons = {
  queue_full: 'queue full (event_hooks.queue_max_size)',
  max_age: 'too old (event_hooks.max_age)',
};

/** reason explains a failure or a drop; empty for a delivery. */
export function reason(r) {
  if (r.outcome === 'dropped') return dropReasons[r.reason] || r.reason || '';
  if (r.outcome === 'failed') return [r.reason, r.error].filter(Boolean).join(': ');
  return '';
}

function row(r) {
  const why = reason(r);
  return h(
    'tr',
    {},
    h('td', { text: time(r.time_ms) }),
    h('td', {}, h('span', { class: `pill ${outcomeTone(r.outcome)}`, text: r.outcome })),
    h('td', { text: r.type }),
    h('td', { class: 'mono', text: r.channel || r.user || '' }),
    // IDs are short and read as one word: not broken like a channel name.
    h('td', {}, h('span', { class: 'mono', text: r.event_id })),
    h('td', { class: 'num', text: r.batch ? count(r.batch) : '–' }),
    h('td', { class: 'num', text: r.attempt ? count(r.attempt) : '–' }),
    why ? h('td', { class: 'error-cell' }, h('span', { class: r.outcome === 'delivered' ? 'muted' : 'cell-note', text: why })) : h('td', { text: '–' }),
  );
}

function stat(label, value) {
  return h('span', { class: 'stat' }, h('span', { class: 'stat-value', text: count(value) }), h('span', { class: 'stat-label', text: label }));
}

let panelSeq = 0;

/**
 * hookPanel is one proxy's section, kept across refreshes so that the
 * table's scroll position and focus survive them. Returns {el, show(q)}.
 */
function hookPanel(name) {
  panelSeq += 1;
  const headingId = `hook-${panelSeq}`;
  const state = h('span', { class: 'pill' });
  const what = h('p', { class: 'muted' });
  const totals = h('p', { class: 'totals' });
  const tbody = h('tbody');
  const empty = h('p', { class: 'muted small', text: 'Nothing delivered, dropped or failed yet.' });
  const table = h(
    'table',
    {},
    h('caption', { class: 'sr-only', text: `Recent events of ${name}` }),
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', text: c })))),
    tbody,
  );
  const wrap = scrollTable(table, `Recent events of ${name}`);
  const el = h(
    'section',
    { class: 'card hook', 'aria-labelledby': headingId },
    h('div', { class: 'section-head' }, h('h2', { id: headingId, class: 'mono', text: name }), state),
    what,
    totals,
    h('h3', { class: 'small', text: 'Recent events and failures, newest first' }),
    empty,
    wrap,
  );
  return {
    el,
    show(q) {
      const s = queueState(q);
      state.className = `pill ${s.tone}`;
      state.textContent = s.label;
      what.textContent = carries(q);
      totals.replaceChildren(
        stat('Queued', q.queue_length),
        stat('Delivered', q.delivered),
        stat('Failed requests', q.failed_requests),
        stat('Dropped', q.dropped),
      );
      const recent = q.recent || [];
      tbody.replaceChildren(...recent.map(row));
      empty.hidden = recent.length > 0;
      wrap.hidden = recent.length === 0;
    },
  };
}

/**
 * hooksPage shows the event hook proxies of the node serving the app,
 * refreshed every two seconds; a node without any says so.
 */
export function hooksPage(main, ctx = {}) {
  const alert = alertBox();
  const intro = h('p', { class: 'muted', text: 'Loading…' });
  const none = h(
    'div',
    { class: 'card notice', hidden: true },
    h('h2', { text: 'No event hooks configured' }),
    h('p', {
      text: 'This node sends no channel state or user status events. Channel state events need state_proxy_enabled in a namespace, with channel.proxy.state or a named proxy; user status events need client.proxy.user_status or client.user_status_proxy_name.',
    }),
  );
  const list = h('div', { class: 'hooks' });
  const updated = h('p', { class: 'muted small' });
  main.append(h('h1', { text: 'Event hooks' }), intro, alert.el, none, list, updated);

  const panels = new Map();
  let timer = null;
  let stopped = false;
  const abort = new AbortController();

  function show(reply) {
    const hooks = (reply && reply.event_hooks) || [];
    const node = (reply && reply.node_name) || (ctx.init && ctx.init.node_name) || 'this node';
    intro.textContent = `The event hook proxies of ${node}: what each was handed, delivered, failed to send and dropped, refreshed every 2 seconds. Every node reports its own.`;
    none.hidden = hooks.length > 0;
    const seen = new Set();
    for (const q of hooks) {
      seen.add(q.name);
      let p = panels.get(q.name);
      if (!p) {
        p = hookPanel(q.name);
        panels.set(q.name, p);
      }
      p.show(q);
    }
    for (const name of panels.keys()) {
      if (!seen.has(name)) panels.delete(name);
    }
    // Moving a section would take the focus out of it: only when the
    // proxies change (which takes a restart, or another node's page).
    const want = hooks.map((q) => panels.get(q.name).el);
    if (want.length !== list.children.length || want.some((el, i) => list.children[i] !== el)) list.replaceChildren(...want);
  }

  async function tick() {
    try {
      const reply = await request('admin/event_hooks', { signal: abort.signal });
      if (stopped) return;
      show(reply);
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}.`;
      alert.clear();
    } catch (err) {
      if (stopped || err.name === 'AbortError') return;
      if (err.status === 404) {
        // An older server: nothing to refresh.
        intro.textContent = 'This server does not report event hooks.';
        return;
      }
      alert.show(`Cannot load the event hooks: ${err.message}`);
    }
    if (!stopped) timer = setTimeout(tick, REFRESH_MS);
  }
  tick();

  return () => {
    stopped = true;
    clearTimeout(timer);
    abort.abort();
  };
}
