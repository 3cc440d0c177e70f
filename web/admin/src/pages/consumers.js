// The Consumers panel of the Status page: the consumers (config consumers)
// of the node the app is served by, from admin/consumers. Each node reports
// its own; the panel shows only when the node has consumers.
import { h, scrollTable } from '../dom.js';
import { count, time } from '../format.js';

export const columns = ['Name', 'Type', 'State', 'Processed', 'Skipped', 'Retries', 'Source errors', 'Lag', 'Last processed', 'Last error'];

/**
 * consumerState is how a consumer is doing: a label, and a pill class.
 * A stopped consumer is "Stopped"; a running one whose source is away is
 * "Source down" (it reconnects by itself).
 */
export function consumerState(c) {
  if (!c.running) return { label: 'Stopped', tone: 'bad' };
  if (!c.connected) return { label: 'Source down', tone: 'bad' };
  return { label: 'Running', tone: 'ok' };
}

/** lag shows a consumer's lag, "–" when its source cannot tell (-1). */
export function lag(n) {
  if (n === undefined || n === null || Number(n) < 0) return '–';
  return count(n);
}

function errorCell(c) {
  if (!c.error) return h('td', { text: '–' });
  const when = c.error_time_ms ? ` (${time(c.error_time_ms)})` : '';
  // A past error of a consumer that is fine now is history, not an alarm.
  return h('td', { class: 'error-cell' }, h('span', { class: c.running && c.connected ? 'muted' : 'cell-note', text: `${c.error}${when}` }));
}

function row(c) {
  const state = consumerState(c);
  return h(
    'tr',
    {},
    h('th', { scope: 'row', text: c.name }),
    h('td', { text: c.type }),
    h('td', {}, h('span', { class: `pill ${state.tone}`, text: state.label })),
    h('td', { class: 'num', text: count(c.processed) }),
    h('td', { class: 'num', text: count(c.skipped) }),
    h('td', { class: 'num', text: count(c.retries) }),
    h('td', { class: 'num', text: count(c.source_errors) }),
    h('td', { class: 'num', text: lag(c.lag) }),
    h('td', { text: c.last_processed_ms ? time(c.last_processed_ms) : 'never' }),
    errorCell(c),
  );
}

/**
 * consumersPanel builds the panel, hidden until show() gets a non-empty list.
 * Returns {el, show(list, nodeName), hide()}.
 */
export function consumersPanel() {
  // The heading above names the section; the caption names the table for
  // screen readers without saying it twice on screen.
  const caption = h('caption', { class: 'sr-only', text: 'Consumers' });
  const tbody = h('tbody');
  const table = h(
    'table',
    {},
    caption,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', text: c })))),
    tbody,
  );
  const note = h('p', { class: 'muted small' });
  const el = h(
    'section',
    { class: 'consumers', 'aria-labelledby': 'consumers-heading', hidden: true },
    h('h2', { id: 'consumers-heading', text: 'Consumers' }),
    note,
    scrollTable(table, 'Consumers table'),
  );
  return {
    el,
    show(list, nodeName) {
      if (!list || !list.length) {
        el.hidden = true;
        return;
      }
      note.textContent = `Consumers of ${nodeName || 'this node'}: they read server API commands from queues and run them on this node. Every node reports its own.`;
      tbody.replaceChildren(...list.map(row));
      el.hidden = false;
    },
    hide() {
      el.hidden = true;
    },
  };
}
