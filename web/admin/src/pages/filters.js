import { h, field, alertBox, pretty } from '../dom.js';
import { request } from '../api.js';
import { compact } from './channels.js';

/** filtersPage tries a filter expression on a channel's recent history (admin/filter). */
export function filtersPage(main) {
  const alert = alertBox();
  const channel = field('Channel', h('input', { type: 'text', name: 'channel', autocomplete: 'off', spellcheck: 'false' }));
  const expr = field(
    'Filter expression',
    h('input', { type: 'text', name: 'filter', autocomplete: 'off', spellcheck: 'false', class: 'code', placeholder: 'tags.kind == "alert"' }),
    'The same syntax as gyre filter.',
  );
  const limit = field('Publications to check', h('input', { type: 'number', name: 'limit', min: 1, max: 1000, value: '20' }));
  const caret = h('pre', { class: 'caret', hidden: true, 'aria-hidden': 'true' });
  const apply = h('button', { type: 'submit', text: 'Apply' });
  const form = h('form', { class: 'card form', onsubmit: submit }, channel.wrap, expr.wrap, caret, limit.wrap, alert.el, h('div', { class: 'buttons' }, apply));

  const normalised = h('p', { class: 'mono' });
  const tree = h('pre', { class: 'json', text: 'Apply an expression to see its tree.' });
  const treeRegion = h('section', { class: 'card', role: 'region', 'aria-label': 'Filter tree', 'aria-live': 'polite' }, h('h2', { text: 'Filter tree' }), normalised, tree);
  const summary = h('p', { class: 'muted small' });
  const pubs = h('ul', { class: 'pubs', 'aria-label': 'Publications' });
  const pubsSection = h('section', { class: 'card wide', 'aria-labelledby': 'pubs-heading' }, h('h2', { id: 'pubs-heading', text: 'Publications' }), summary, pubs);

  async function submit(event) {
    event.preventDefault();
    alert.clear();
    caret.hidden = true;
    expr.input.removeAttribute('aria-invalid');
    apply.disabled = true;
    try {
      const reply = await request('admin/filter', {
        method: 'POST',
        json: { filter: expr.input.value, channel: channel.input.value.trim(), limit: Number(limit.input.value) || 20 },
      });
      normalised.textContent = reply.expression ? `Normalised: ${reply.expression}` : '';
      tree.textContent = pretty(reply.node);
      const list = reply.publications || [];
      const kept = list.filter((p) => p.kept).length;
      summary.textContent = list.length ? `${kept} of ${list.length} kept (newest first).` : 'The channel has no history to check.';
      pubs.replaceChildren(
        ...list.map((p) =>
          h(
            'li',
            { class: `pub ${p.kept ? 'kept' : 'dropped'}` },
            h('div', { class: 'pub-meta' }, h('span', { class: `pill ${p.kept ? 'ok' : 'bad'}`, text: p.kept ? 'kept' : 'dropped' }), h('span', { class: 'offset', text: `#${p.offset}` })),
            h('pre', { class: 'json', text: compact(p.data) }),
            Object.keys(p.tags || {}).length
              ? h('p', { class: 'tags' }, h('span', { class: 'sr-only', text: 'Tags: ' }), Object.entries(p.tags).map(([k, v]) => h('span', { class: 'tag', text: `${k}=${v}` })))
              : null,
          ),
        ),
      );
    } catch (err) {
      const e = err.body && err.body.error;
      if (err.status === 400 && e) {
        const at = Number.isInteger(e.position) ? ` (at character ${e.position + 1})` : '';
        alert.show(`${e.message}${at}`);
        expr.input.setAttribute('aria-invalid', 'true');
        if (Number.isInteger(e.position)) {
          caret.textContent = `${expr.input.value}\n${' '.repeat(Math.max(0, e.position))}^`;
          caret.hidden = false;
        }
      } else alert.show(err.message);
    } finally {
      apply.disabled = false;
    }
  }

  main.append(
    h('h1', { text: 'Filters' }),
    h('p', { class: 'muted', text: "Type a filter expression to see its FilterNode tree and which of the channel's recent publications it keeps." }),
    h('div', { class: 'two-col' }, form, treeRegion),
    pubsSection,
  );
  return () => {};
}
