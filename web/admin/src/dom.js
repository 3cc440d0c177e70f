// Small DOM helpers: the app builds its pages with h() instead of a framework.

/**
 * h creates an element. attrs: plain attributes, except "on*" (listeners),
 * "class", "text" (textContent), and boolean/undefined values (set or left out).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'text') {
      el.textContent = value;
    } else if (key === 'value') {
      el.value = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

let fieldSeq = 0;

/** uid returns an id unique in the page, for label/for and aria-describedby pairs. */
export function uid(prefix) {
  fieldSeq += 1;
  return `${prefix}-${fieldSeq}`;
}

/**
 * field builds a labelled control: the label, the control, and an optional hint
 * tied to it by aria-describedby. Returns {wrap, input}.
 */
export function field(label, control, hint) {
  const id = control.id || uid('f');
  control.id = id;
  const parts = [h('label', { for: id, text: label }), control];
  if (hint) {
    const hintId = `${id}-hint`;
    parts.push(h('p', { id: hintId, class: 'hint', text: hint }));
    control.setAttribute('aria-describedby', hintId);
  }
  return { wrap: h('div', { class: 'field' }, parts), input: control };
}

/** alertBox is an empty region that announces errors put into it. */
export function alertBox() {
  const el = h('div', { role: 'alert', class: 'alert' });
  return {
    el,
    show(message) {
      el.textContent = message;
      el.classList.toggle('shown', Boolean(message));
    },
    clear() {
      el.textContent = '';
      el.classList.remove('shown');
    },
  };
}

/** pretty formats JSON for display. */
export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

/** scrollTable wraps a table so that it scrolls sideways on narrow screens and by keyboard. */
export function scrollTable(table, label) {
  return h('div', { class: 'table-wrap', tabindex: '0', role: 'group', 'aria-label': label }, table);
}
