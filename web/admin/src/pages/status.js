import { h, alertBox, scrollTable } from '../dom.js';
import { request, apiResult } from '../api.js';
import { duration, bytes, count, rate } from '../format.js';
import { consumersPanel } from './consumers.js';

const REFRESH_MS = 2000;

const columns = ['Name', 'Version', 'Uptime', 'Clients', 'Users', 'Subscriptions', 'Channels', 'Publish rate', 'Memory', 'Broker'];

// fromInfo maps the API info method's node entries to admin/nodes' shape, for a
// server whose admin/nodes route is missing.
// Gyre's info adds metrics items (gyre_publish_rate, gyre_memory_bytes,
// gyre_broker_healthy); other servers may have only process.rss or nothing.
export function fromInfo(result) {
  return (result.nodes || []).map((n) => {
    const items = (n.metrics && n.metrics.items) || {};
    const healthy = items.gyre_broker_healthy;
    return {
      id: n.uid,
      name: n.name,
      version: n.version,
      uptime_seconds: n.uptime,
      num_clients: n.num_clients,
      num_users: n.num_users,
      num_subs: n.num_subs,
      num_channels: n.num_channels,
      publish_rate: items.gyre_publish_rate,
      memory_bytes: items.gyre_memory_bytes ?? (n.process ? n.process.rss : undefined),
      broker_healthy: healthy === undefined ? undefined : healthy === 1,
    };
  });
}

function brokerCell(node) {
  if (node.broker_healthy === undefined || node.broker_healthy === null) return h('td', { text: '–' });
  if (node.broker_healthy) return h('td', {}, h('span', { class: 'pill ok', text: 'Healthy' }));
  return h('td', {}, h('span', { class: 'pill bad', text: 'Failing' }), node.broker_error ? h('span', { class: 'cell-note', text: ` ${node.broker_error}` }) : null);
}

function row(node) {
  return h(
    'tr',
    {},
    h('th', { scope: 'row', text: node.name || node.id || '?' }),
    h('td', { text: node.version || '–' }),
    h('td', { class: 'num', text: duration(node.uptime_seconds) }),
    h('td', { class: 'num', text: count(node.num_clients) }),
    h('td', { class: 'num', text: count(node.num_users) }),
    h('td', { class: 'num', text: count(node.num_subs) }),
    h('td', { class: 'num', text: count(node.num_channels) }),
    h('td', { class: 'num', text: rate(node.publish_rate) }),
    h('td', { class: 'num', text: bytes(node.memory_bytes) }),
    brokerCell(node),
  );
}

/**
 * statusPage shows every node of the cluster and, when the node the app is
 * served by runs consumers, its consumers, refreshed every two seconds.
 */
export function statusPage(main, ctx = {}) {
  const alert = alertBox();
  const tbody = h('tbody', {}, h('tr', {}, h('td', { colspan: columns.length, text: 'Loading…' })));
  const table = h(
    'table',
    {},
    h('caption', { text: 'Nodes' }),
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', text: c })))),
    tbody,
  );
  const updated = h('p', { class: 'muted small', text: '' });
  const totals = h('p', { class: 'totals' });
  const consumers = consumersPanel();
  main.append(
    h('h1', { text: 'Status' }),
    h('p', { class: 'muted', text: 'Every node of the cluster, refreshed every 2 seconds.' }),
    alert.el,
    totals,
    scrollTable(table, 'Nodes table'),
    updated,
    consumers.el,
  );

  let useInfo = false;
  // hasConsumers turns false for a server without the consumers route.
  let hasConsumers = true;
  let timer = null;
  let stopped = false;
  const abort = new AbortController();

  async function load() {
    if (!useInfo) {
      try {
        const reply = await request('admin/nodes', { signal: abort.signal });
        return (reply && reply.nodes) || [];
      } catch (err) {
        if (err.status !== 404) throw err;
        useInfo = true; // an older server: the API's info method has most of it
      }
    }
    return fromInfo(await apiResult('info', {}, { signal: abort.signal }));
  }

  async function loadConsumers() {
    if (!hasConsumers) return null;
    try {
      return await request('admin/consumers', { signal: abort.signal });
    } catch (err) {
      if (err.status !== 404) throw err;
      hasConsumers = false; // an older server
      return null;
    }
  }

  async function tick() {
    try {
      const [nodes, own] = await Promise.all([load(), loadConsumers()]);
      if (stopped) return;
      consumers.show(own && own.consumers, (own && own.node_name) || (ctx.init && ctx.init.node_name));
      nodes.sort((a, b) => String(a.name).localeCompare(String(b.name)));
      tbody.replaceChildren(...(nodes.length ? nodes.map(row) : [h('tr', {}, h('td', { colspan: columns.length, text: 'No nodes reported yet.' }))]));
      const sum = (k) => nodes.reduce((acc, n) => acc + (Number(n[k]) || 0), 0);
      totals.replaceChildren(
        ...[
          ['Nodes', nodes.length],
          ['Clients', sum('num_clients')],
          ['Users', sum('num_users')],
          ['Channels', sum('num_channels')],
        ].map(([label, value]) => h('span', { class: 'stat' }, h('span', { class: 'stat-value', text: count(value) }), h('span', { class: 'stat-label', text: label }))),
      );
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}${useInfo ? ' (from the API info method)' : ''}.`;
      alert.clear();
    } catch (err) {
      if (stopped || err.name === 'AbortError') return;
      alert.show(`Cannot load the nodes: ${err.message}`);
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
