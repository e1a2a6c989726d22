// The Quayside console: a small single-page application over the JSON API.
// No framework and no build step: views are functions that build DOM nodes
// (never HTML strings, so no record text is ever parsed as markup), chosen by
// the location hash (`#/ports?name=rot`, `#/workspaces/ID/jobs/ID`).

import * as api from './api.js';
import { ApiError } from './api.js';
import * as fmt from './format.js';

// ---------------------------------------------------------------------------
// DOM helpers

/**
 * Builds an element. `props`: `class`, `text`, `on` ({event: handler}), `data`
 * (dataset), booleans and other attributes; children are nodes, strings,
 * numbers, arrays or null (skipped).
 */
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = value;
    else if (name === 'on') for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
    else if (name === 'data') Object.assign(el.dataset, value);
    else if (name === 'value') el.value = value;
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Text with `backtick` spans shown as code, as the API's messages quote field names. */
function richText(message) {
  return String(message)
    .split('`')
    .map((part, i) => (i % 2 ? h('code', { text: part }) : part));
}

const $ = (selector, root = document) => root.querySelector(selector);
const dash = '—';
const orDash = (value) => (value === null || value === undefined || value === '' ? dash : value);
const shortId = (id) => (id ? `${String(id).slice(0, 8)}…` : dash);

function loading(what = 'Loading…') {
  return h('p', { class: 'placeholder', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), what);
}

function badge(text, kind) {
  return h('span', { class: `badge badge-${kind}` }, text);
}

function statusBadge(status) {
  const kinds = { ACTIVE: 'ok', INACTIVE: 'muted', pending: 'muted', active: 'info', complete: 'ok', cancelled: 'bad' };
  return status ? badge(status, kinds[status] ?? 'muted') : dash;
}

let fieldIds = 0;

/** A labelled control; a hint is linked to it with aria-describedby. */
function field(label, control, hint) {
  if (!control.id) control.id = `field-${++fieldIds}`;
  const note = hint ? h('span', { class: 'field-hint', id: `${control.id}-hint` }, hint) : null;
  if (note) control.setAttribute('aria-describedby', note.id);
  return h('div', { class: 'field' }, h('label', { class: 'field-label', for: control.id }, label), control, note);
}

function definitionList(rows) {
  return h(
    'dl',
    { class: 'details' },
    rows.filter(Boolean).map(([term, value]) => h('div', { class: 'detail' }, h('dt', {}, term), h('dd', {}, value === null || value === undefined || value === '' || (Array.isArray(value) && !value.length) ? dash : value))),
  );
}

function table(headers, rows, options = {}) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: `table ${options.class ?? ''}`.trim(), 'aria-label': options.label },
      h('thead', {}, h('tr', {}, headers.map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, rows),
    ),
  );
}

function empty(text) {
  return h('p', { class: 'empty' }, text);
}

function pageHeader(title, { crumbs = [], actions = [], subtitle } = {}) {
  document.title = `${typeof title === 'string' ? title : 'Quayside'} · Quayside console`;
  return h(
    'div',
    { class: 'page-header' },
    crumbs.length
      ? h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, crumbs.map(([label, href], i) => [i ? h('span', { class: 'crumb-sep', 'aria-hidden': 'true' }, '/') : null, href ? h('a', { href }, label) : h('span', {}, label)]))
      : null,
    h('div', { class: 'page-title-row' }, h('div', {}, h('h1', {}, title), subtitle ? h('p', { class: 'subtitle' }, subtitle) : null), h('div', { class: 'actions' }, actions)),
  );
}

function section(title, ...children) {
  const id = `section-${title.toLowerCase().replace(/[^a-z]+/g, '-')}`;
  return h('section', { class: 'card', 'aria-labelledby': id }, h('h2', { id }, title), children);
}

// ---------------------------------------------------------------------------
// Messages: errors of the API (the contract's body), notices, the busy state

const messages = $('#messages');
let flash = null;

const TITLES = {
  0: 'No connection to the server',
  400: 'The request was refused',
  401: 'Not signed in',
  404: 'Not found',
  405: 'Not allowed',
  409: 'Conflict with what is stored',
  413: 'Too large',
  415: 'Unsupported content',
  416: 'Outside the file',
  429: 'Too many attempts',
  500: 'Server error',
  503: 'The server is shutting down',
  507: 'The server is out of storage',
};

function clearMessages() {
  messages.replaceChildren();
  for (const el of document.querySelectorAll('[aria-invalid="true"]')) el.removeAttribute('aria-invalid');
}

function message(kind, title, body, extra = []) {
  const el = h(
    'div',
    { class: `message message-${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    h('div', { class: 'message-body' }, h('div', { class: 'message-title' }, title), body ? h('div', { class: 'message-text' }, body) : null, extra),
    h('button', { type: 'button', class: 'message-close', 'aria-label': 'Dismiss', on: { click: () => el.remove() } }, '×'),
  );
  return el;
}

/** Describes an error as a message element: the contract's message, its field, status and code. */
function errorMessage(err, title) {
  if (!(err instanceof ApiError)) {
    return message('error', title ?? 'Something went wrong in the console', String(err?.message ?? err));
  }
  const heading = title ?? TITLES[err.status] ?? (err.status >= 500 ? 'Server error' : 'The request failed');
  return message('error', heading, richText(err.message), [
    err.field ? h('div', { class: 'message-field' }, 'Field: ', h('code', { text: err.field })) : null,
    err.status ? h('div', { class: 'message-code' }, `${err.status} · ${err.code}`) : null,
  ]);
}

/**
 * Shows an error above the view. With `form`, the input named by the error's
 * `field` is marked and focused. Errors that ended the session are left to the
 * sign-in page.
 */
function showError(err, { form, title } = {}) {
  if (err?.sessionEnded) return;
  console.error(err);
  messages.replaceChildren(errorMessage(err, title));
  if (form && err?.field) markField(form, err.field);
  messages.scrollIntoView?.({ block: 'nearest' });
}

function markField(form, name) {
  const input = form.elements.namedItem(name.replace(/^body\./, ''));
  if (input && input.focus) {
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  }
}

function notice(text, kind = 'success') {
  messages.replaceChildren(message(kind, text));
}

function setFlash(text, kind = 'success') {
  flash = { text, kind };
}

const busyEl = $('#busy');
let busyTimer = null;
api.onBusy((count) => {
  document.body.classList.toggle('is-busy', count > 0);
  $('#main').setAttribute('aria-busy', String(count > 0));
  clearTimeout(busyTimer);
  if (count > 0) busyEl.hidden = false;
  else busyTimer = setTimeout(() => (busyEl.hidden = true), 120);
});

// ---------------------------------------------------------------------------
// Routing

function currentRoute() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, search = ''] = hash.split('?');
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return part;
      }
    });
  return { parts, query: new URLSearchParams(search) };
}

/** Where to go after signing in: a page of the console (a `#/` hash), never another address. */
function nextPage(query) {
  const next = query.get('next') ?? '';
  return next.startsWith('#/') && !next.startsWith('#/signin') ? next : '#/ports';
}

function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function hashWith(base, params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== '' && value !== null && value !== undefined) search.set(name, value);
  const text = search.toString();
  return text ? `${base}?${text}` : base;
}

let renderToken = 0;
const leaving = [];

/** `stop()` is called when the page leaves the current view (e.g. to end its live stream). */
function onLeave(stop) {
  leaving.push(stop);
}

async function render() {
  for (const stop of leaving.splice(0)) {
    try {
      stop();
    } catch (err) {
      console.error(err);
    }
  }
  const token = ++renderToken;
  const alive = () => token === renderToken;
  const { parts, query } = currentRoute();
  const current = api.session();
  const section = parts[0] ?? '';

  $('#nav').hidden = !current;
  $('#account').hidden = !current;
  $('#account-name').textContent = current?.username ?? '';
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.dataset.section === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }

  if (!current && section !== 'signin') {
    const next = location.hash && location.hash !== '#/' ? location.hash : '';
    location.replace(hashWith('#/signin', { next }));
    return;
  }
  if (current && (section === 'signin' || section === '')) {
    location.replace(section === 'signin' ? nextPage(query) : '#/ports');
    return;
  }

  const view = $('#view');
  clearMessages();
  if (flash) {
    notice(flash.text, flash.kind);
    flash = null;
  }
  view.replaceChildren(loading());
  try {
    await dispatch(view, parts, query, alive);
  } catch (err) {
    if (!alive()) return;
    showError(err);
    if (view.querySelector('.placeholder') && view.children.length === 1) {
      view.replaceChildren(empty('This page could not be loaded. See the message above.'));
    }
  }
}

async function dispatch(view, parts, query, alive) {
  const [section, id, sub, subId, extra] = parts;
  if (section === 'signin') return signInView(view, query);
  if (section in LOCATIONS) {
    const catalog = LOCATIONS[section];
    if (!id) return locationSearchView(view, catalog, query, alive);
    if (id === 'new' && !sub) return locationFormView(view, catalog, null, alive);
    if (sub === 'edit') return locationFormView(view, catalog, id, alive);
    if (!sub) return locationView(view, catalog, id, alive);
  }
  if (section === 'workspaces') {
    if (!id) return workspacesView(view, query, alive);
    if (!sub) return workspaceView(view, id, query, alive);
    if (sub === 'jobs' && subId && !extra) return jobView(view, id, subId, alive);
  }
  view.replaceChildren(pageHeader('Page not found'), empty('There is no such page in the console.'), h('p', {}, h('a', { href: '#/ports' }, 'Go to the ports')));
}

api.onUnauthorized((err) => {
  err.sessionEnded = true;
  setFlash(`Your session has ended: ${err.message}. Sign in again to continue.`, 'warning');
  const next = location.hash.startsWith('#/signin') ? '' : location.hash;
  location.hash = hashWith('#/signin', { next });
});

$('#sign-out').addEventListener('click', async () => {
  try {
    await api.signOut();
    setFlash('You are signed out.', 'info');
  } catch (err) {
    // The key is forgotten here whatever the server said.
    setFlash(`You are signed out here; the server answered: ${err.message}`, 'warning');
  }
  go('#/signin');
});

window.addEventListener('hashchange', render);
render();

// ---------------------------------------------------------------------------
// Sign in

function signInView(view, query) {
  document.title = 'Sign in · Quayside console';
  const username = h('input', { name: 'username', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const submit = h('button', { type: 'submit', class: 'button button-primary button-wide' }, 'Sign in');
  const form = h(
    'form',
    { class: 'card signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in'),
    h('p', { class: 'muted' }, 'Sign in with your Quayside account to work with ports, inland facilities and inspection workspaces.'),
    field('Username', username),
    field('Password', password),
    submit,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    messages.querySelector('.message-error')?.remove();
    submit.disabled = true;
    submit.textContent = 'Signing in…';
    try {
      await api.signIn(username.value.trim(), password.value);
      clearMessages();
      location.hash = nextPage(query);
    } catch (err) {
      showError(err, { title: err.status === 401 ? 'Sign-in failed' : undefined });
      password.select();
    } finally {
      submit.disabled = false;
      submit.textContent = 'Sign in';
    }
  });
  view.replaceChildren(h('div', { class: 'signin-wrap' }, form));
  username.focus();
}

// ---------------------------------------------------------------------------
// Ports and inland facilities

const LOCATIONS = {
  ports: { key: 'ports', path: '/api/rest/1.0/ports', title: 'Ports', one: 'port', One: 'Port' },
  inland_facilities: { key: 'inland_facilities', path: '/api/rest/1.0/inland_facilities', title: 'Inland facilities', one: 'inland facility', One: 'Inland facility' },
};

const locationPath = (catalog, code) => `${catalog.path}/${encodeURIComponent(code)}`;
const locationHash = (catalog, code) => `#/${catalog.key}/${encodeURIComponent(code)}`;

async function locationSearchView(view, catalog, query, alive) {
  const q = {
    name: query.get('name') ?? '',
    countryCode: query.get('countryCode') ?? '',
    statusCode: query.get('statusCode') ?? '',
    dateModifiedFrom: query.get('dateModifiedFrom') ?? '',
    dateModifiedTo: query.get('dateModifiedTo') ?? '',
    resultsPerPage: query.get('resultsPerPage') ?? '25',
    page: query.get('page') ?? '1',
  };
  const select = (name, options) => h('select', { name }, options.map(([value, label]) => h('option', { value, selected: q[name] === value }, label)));
  const form = h(
    'form',
    { class: 'card search', role: 'search', 'aria-label': `Search ${catalog.title.toLowerCase()}` },
    h(
      'div',
      { class: 'search-grid' },
      field('Name contains', h('input', { name: 'name', type: 'search', value: q.name, placeholder: 'e.g. rotter' })),
      field('Country', h('input', { name: 'countryCode', value: q.countryCode, maxlength: 2, placeholder: 'NL', class: 'input-short', autocapitalize: 'characters' })),
      field('Status', select('statusCode', [['', 'Any'], ['ACTIVE', 'Active'], ['INACTIVE', 'Inactive']])),
      field('Modified from', h('input', { name: 'dateModifiedFrom', type: 'date', value: q.dateModifiedFrom })),
      field('Modified to', h('input', { name: 'dateModifiedTo', type: 'date', value: q.dateModifiedTo })),
      field('Per page', select('resultsPerPage', [...new Set(['10', '25', '50', '100', '200', q.resultsPerPage])].sort((a, b) => a - b).map((n) => [n, n]))),
    ),
    h(
      'div',
      { class: 'form-actions' },
      h('button', { type: 'submit', class: 'button button-primary' }, 'Search'),
      h('a', { class: 'button button-ghost', href: `#/${catalog.key}` }, 'Clear'),
      h('span', { class: 'field-hint' }, 'Dates are UTC days, both included.'),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    data.countryCode = data.countryCode.trim().toUpperCase();
    data.name = data.name.trim();
    if (data.resultsPerPage === '25') delete data.resultsPerPage;
    go(hashWith(`#/${catalog.key}`, data));
  });

  const results = h('div', { class: 'card results', 'aria-live': 'polite' }, loading(`Searching ${catalog.title.toLowerCase()}…`));
  view.replaceChildren(
    pageHeader(catalog.title, {
      subtitle: `The shared ${catalog.one === 'port' ? 'ports' : 'inland facilities'} catalog: search, view, create and edit records.`,
      actions: [h('a', { class: 'button button-primary', href: `#/${catalog.key}/new` }, `New ${catalog.one}`)],
    }),
    form,
    results,
  );

  let data;
  try {
    data = await api.get(catalog.path, {
      name: q.name,
      countryCode: q.countryCode,
      statusCode: q.statusCode,
      dateModifiedFrom: q.dateModifiedFrom && fmt.dayStart(q.dateModifiedFrom),
      dateModifiedTo: q.dateModifiedTo && fmt.dayAfter(q.dateModifiedTo),
      page: q.page,
      resultsPerPage: q.resultsPerPage,
    });
  } catch (err) {
    if (!alive()) return;
    results.replaceChildren(empty('No results: the search was refused. See the message above.'));
    showError(err, { form });
    return;
  }
  if (!alive()) return;

  const total = data.totalResultsAvailable;
  const first = data.firstResultPosition;
  const per = data.resultsPerPage;
  const pages = Math.max(1, Math.ceil(total / per));
  const page = Math.floor((first - 1) / per) + 1;
  const last = first + data.results.length - 1;
  const pageHash = (n) => hashWith(`#/${catalog.key}`, { ...q, resultsPerPage: q.resultsPerPage === '25' ? '' : q.resultsPerPage, page: n === 1 ? '' : n });

  const rows = data.results.map((r) =>
    h(
      'tr',
      { class: 'row-link', on: { click: (e) => e.target.closest('a') || go(locationHash(catalog, r.clientCode)) } },
      h('td', {}, h('a', { href: locationHash(catalog, r.clientCode), class: 'mono' }, r.clientCode)),
      h('td', {}, r.name),
      h('td', {}, orDash(r.countryCode)),
      h('td', { class: 'mono nowrap' }, fmt.position(r) || dash),
      h('td', {}, statusBadge(r.statusCode)),
      h('td', { class: 'nowrap' }, fmt.dateTime(r.dateModified), h('span', { class: 'muted' }, ` by ${r.modifier}`)),
    ),
  );
  results.replaceChildren(
    h(
      'div',
      { class: 'results-head' },
      h('p', { class: 'results-count' }, total === 0 ? `No ${catalog.title.toLowerCase()} match.` : data.results.length ? `Showing ${first}–${last} of ${total}` : `Page ${page} is past the last of ${total} results.`),
      pager(page, pages, pageHash),
    ),
    data.results.length ? table(['Code', 'Name', 'Country', 'Position', 'Status', 'Last modified'], rows, { label: `${catalog.title} found` }) : null,
  );
}

function pager(page, pages, hashOf) {
  if (pages <= 1 && page <= 1) return null;
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    page > 1 ? h('a', { class: 'button button-small', href: hashOf(page - 1), rel: 'prev' }, '‹ Previous') : h('span', { class: 'button button-small', 'aria-disabled': 'true' }, '‹ Previous'),
    h('span', { class: 'pager-pos' }, `Page ${page} of ${pages}`),
    page < pages ? h('a', { class: 'button button-small', href: hashOf(page + 1), rel: 'next' }, 'Next ›') : h('span', { class: 'button button-small', 'aria-disabled': 'true' }, 'Next ›'),
  );
}

async function locationView(view, catalog, code, alive) {
  const record = await api.get(locationPath(catalog, code));
  if (!alive()) return;
  const lat = fmt.decimalDegrees(record.latitudeDeg, record.latitudeMin, record.latitudeSec, record.latitudeNs);
  const lon = fmt.decimalDegrees(record.longitudeDeg, record.longitudeMin, record.longitudeSec, record.longitudeWe);
  const active = record.statusCode === 'ACTIVE';
  const remove = h(
    'button',
    { type: 'button', class: active ? 'button' : 'button button-danger' },
    active ? 'Deactivate' : 'Delete for good',
  );
  remove.addEventListener('click', async () => {
    const question = active
      ? `Deactivate ${catalog.one} ${record.clientCode} (${record.name})? It stays in the catalog as INACTIVE.`
      : `Delete ${catalog.one} ${record.clientCode} (${record.name}) for good? This cannot be undone.`;
    if (!window.confirm(question)) return;
    remove.disabled = true;
    try {
      const result = await api.request('DELETE', locationPath(catalog, record.clientCode));
      if (result.statusCode === 'DELETED') {
        setFlash(`${catalog.One} ${record.clientCode} was deleted.`);
        go(`#/${catalog.key}`);
      } else {
        setFlash(`${catalog.One} ${record.clientCode} is now ${result.statusCode}.`);
        go(locationHash(catalog, record.clientCode));
      }
    } catch (err) {
      remove.disabled = false;
      showError(err);
    }
  });
  view.replaceChildren(
    pageHeader(record.name, {
      crumbs: [[catalog.title, `#/${catalog.key}`], [record.clientCode]],
      subtitle: h('span', {}, h('span', { class: 'mono' }, record.clientCode), ' ', statusBadge(record.statusCode)),
      actions: [h('a', { class: 'button button-primary', href: `${locationHash(catalog, record.clientCode)}/edit` }, 'Edit'), remove],
    }),
    h(
      'div',
      { class: 'card' },
      definitionList([
        ['Code', h('span', { class: 'mono' }, record.clientCode)],
        ['Name', record.name],
        ['Country', record.countryCode],
        ['Geographic region', record.geoRegionCode],
        ['Position', fmt.position(record) ? h('span', { class: 'mono', 'data-testid': 'position' }, fmt.position(record)) : null],
        ['Decimal degrees', lat !== null && lon !== null ? h('span', { class: 'mono' }, `${lat.toFixed(5)}, ${lon.toFixed(5)}`) : null],
        ['Status', statusBadge(record.statusCode)],
        ['Restrictions', record.restrictions ? h('span', { class: 'prewrap' }, record.restrictions) : null],
        ['General comments', record.generalComments ? h('span', { class: 'prewrap' }, record.generalComments) : null],
        ['Created', `${fmt.dateTime(record.dateCreated)} by ${record.creator}`],
        ['Last modified', `${fmt.dateTime(record.dateModified)} by ${record.modifier}`],
      ]),
    ),
  );
}

const COORDINATE_FIELDS = ['latitudeDeg', 'latitudeMin', 'latitudeSec', 'longitudeDeg', 'longitudeMin', 'longitudeSec'];

async function locationFormView(view, catalog, code, alive) {
  const creating = code === null;
  const record = creating ? { statusCode: 'ACTIVE' } : await api.get(locationPath(catalog, code));
  if (!alive()) return;
  const value = (name) => record[name] ?? '';
  const number = (name, max, step = '1') => h('input', { name, type: 'number', min: 0, max, step, value: value(name), class: 'input-num', 'aria-label': name });
  const hemisphere = (name, options) => h('select', { name, 'aria-label': name }, [['', '–'], ...options.map((o) => [o, o])].map(([v, label]) => h('option', { value: v, selected: value(name) === v }, label)));
  const preview = h('output', { class: 'mono', 'aria-live': 'polite' });

  const form = h(
    'form',
    { class: 'card form', novalidate: true, 'aria-label': creating ? `New ${catalog.one}` : `Edit ${catalog.one}` },
    h(
      'div',
      { class: 'form-grid' },
      creating
        ? field('Code', h('input', { name: 'clientCode', required: true, maxlength: 64, class: 'mono', placeholder: 'NLRTM' }), 'Letters, digits, dot, underscore and hyphen; case-sensitive.')
        : field('Code', h('input', { name: 'clientCode', value: record.clientCode, readonly: true, class: 'mono' })),
      field('Name', h('input', { name: 'name', required: true, maxlength: 256, value: value('name') })),
      field('Country code', h('input', { name: 'countryCode', maxlength: 2, value: value('countryCode'), class: 'input-short', autocapitalize: 'characters' }), 'ISO 3166-1 alpha-2, e.g. NL'),
      field('Geographic region', h('input', { name: 'geoRegionCode', maxlength: 64, value: value('geoRegionCode') })),
      h(
        'fieldset',
        { class: 'coordinates' },
        h('legend', {}, 'Latitude'),
        number('latitudeDeg', 90),
        h('span', { class: 'unit' }, '°'),
        number('latitudeMin', 59),
        h('span', { class: 'unit' }, '′'),
        number('latitudeSec', 59.999, 'any'),
        h('span', { class: 'unit' }, '″'),
        hemisphere('latitudeNs', ['N', 'S']),
      ),
      h(
        'fieldset',
        { class: 'coordinates' },
        h('legend', {}, 'Longitude'),
        number('longitudeDeg', 180),
        h('span', { class: 'unit' }, '°'),
        number('longitudeMin', 59),
        h('span', { class: 'unit' }, '′'),
        number('longitudeSec', 59.999, 'any'),
        h('span', { class: 'unit' }, '″'),
        hemisphere('longitudeWe', ['E', 'W']),
      ),
      h('div', { class: 'field' }, h('span', { class: 'field-label' }, 'Position'), preview),
      field(
        'Status',
        h('select', { name: 'statusCode' }, ['ACTIVE', 'INACTIVE'].map((s) => h('option', { value: s, selected: value('statusCode') === s }, s))),
      ),
      field('Restrictions', h('textarea', { name: 'restrictions', rows: 3, value: value('restrictions') })),
      field('General comments', h('textarea', { name: 'generalComments', rows: 3, value: value('generalComments') })),
    ),
    h(
      'div',
      { class: 'form-actions' },
      h('button', { type: 'submit', class: 'button button-primary' }, creating ? `Create ${catalog.one}` : 'Save changes'),
      h('a', { class: 'button button-ghost', href: creating ? `#/${catalog.key}` : locationHash(catalog, code) }, 'Cancel'),
    ),
  );

  const read = () => {
    const data = new FormData(form);
    const text = (name) => {
      const v = String(data.get(name) ?? '').trim();
      return v === '' ? null : v;
    };
    const body = {
      name: text('name'),
      countryCode: text('countryCode')?.toUpperCase() ?? null,
      geoRegionCode: text('geoRegionCode'),
      latitudeNs: text('latitudeNs'),
      longitudeWe: text('longitudeWe'),
      statusCode: text('statusCode'),
      restrictions: text('restrictions'),
      generalComments: text('generalComments'),
    };
    for (const name of COORDINATE_FIELDS) {
      const v = text(name);
      body[name] = v === null ? null : Number(v);
    }
    return { code: text('clientCode'), body };
  };
  const update = () => {
    preview.textContent = fmt.position(read().body) || dash;
  };
  form.addEventListener('input', update);
  update();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearMessages();
    const { code: target, body } = read();
    if (!target) {
      showError(new ApiError(0, 'missing_field', 'Give the record a code.', 'clientCode'), { form, title: 'The code is missing' });
      return;
    }
    const submit = form.querySelector('button[type="submit"]');
    submit.disabled = true;
    try {
      if (creating) {
        // PUT would replace a record with that code: refuse to overwrite from "New".
        const existing = await api.request('GET', locationPath(catalog, target)).catch((err) => {
          if (err.status === 404) return null;
          throw err;
        });
        if (existing) {
          throw new ApiError(409, 'exists', `A ${catalog.one} with the code ${target} exists already (${existing.name}). Open it to edit it.`, 'clientCode');
        }
      }
      await api.request('PUT', locationPath(catalog, target), { json: body });
      setFlash(`${catalog.One} ${target} was ${creating ? 'created' : 'saved'}.`);
      go(locationHash(catalog, target));
    } catch (err) {
      showError(err, { form, title: err.code === 'exists' ? 'The code is taken' : undefined });
    } finally {
      submit.disabled = false;
    }
  });

  view.replaceChildren(
    pageHeader(creating ? `New ${catalog.one}` : `Edit ${record.name}`, {
      crumbs: creating ? [[catalog.title, `#/${catalog.key}`], ['New']] : [[catalog.title, `#/${catalog.key}`], [record.clientCode, locationHash(catalog, code)], ['Edit']],
    }),
    form,
  );
  form.elements.namedItem(creating ? 'clientCode' : 'name').focus();
}

// ---------------------------------------------------------------------------
// Names of organizations and catalog records

const organizations = new Map();

/** The name of an organization (GET /v2/organizations/{id}, once per id); null when not readable. */
function organizationName(id) {
  if (!id) return Promise.resolve(null);
  if (!organizations.has(id)) {
    organizations.set(
      id,
      api.get(`/v2/organizations/${encodeURIComponent(id)}`).then(
        (envelope) => envelope.body?.name ?? null,
        (err) => {
          organizations.delete(id);
          if (err.status === 404) return null;
          throw err;
        },
      ),
    );
  }
  return organizations.get(id);
}

async function organizationLabels(ids) {
  const unique = [...new Set(ids.filter(Boolean))];
  const names = await Promise.all(unique.map(organizationName));
  const labels = new Map(unique.map((id, i) => [id, names[i] ?? shortId(id)]));
  return (id) => (id ? labels.get(id) : dash);
}

/**
 * Names of a workspace's catalog records: each catalog listed once (up to
 * 1000 records), records beyond that fetched one by one.
 */
class CatalogNames {
  constructor(workspace) {
    this.workspace = workspace;
    this.records = new Map();
  }

  base(catalog) {
    return `/workspaces/${encodeURIComponent(this.workspace)}/catalogs/${catalog}`;
  }

  /** Loads the catalogs, then any of `wanted` ({catalog: [ids]}) the lists did not hold. */
  async load(wanted) {
    const catalogs = Object.keys(wanted);
    const lists = await Promise.all(catalogs.map((c) => api.get(this.base(c), { limit: 1000 })));
    catalogs.forEach((catalog, i) => {
      const map = new Map(lists[i].map((envelope) => [envelope.id, envelope.body]));
      this.records.set(catalog, map);
    });
    await this.ensure(wanted);
  }

  /** Whether every id of `wanted` ({catalog: [ids]}) has its record here. */
  knows(wanted) {
    return Object.entries(wanted).every(([catalog, ids]) => ids.every((id) => !id || this.records.get(catalog)?.has(id)));
  }

  /** Fetches the records of `wanted` not here yet, one by one (a live change may name new ones). */
  async ensure(wanted) {
    const missing = [];
    for (const [catalog, ids] of Object.entries(wanted)) {
      if (!this.records.has(catalog)) this.records.set(catalog, new Map());
      for (const id of new Set(ids.filter(Boolean))) if (!this.records.get(catalog).has(id)) missing.push([catalog, id]);
    }
    await Promise.all(
      missing.map(([catalog, id]) =>
        api.get(`${this.base(catalog)}/${encodeURIComponent(id)}`).then(
          (body) => this.records.get(catalog).set(id, body),
          (err) => {
            if (err.status !== 404) throw err;
            this.records.get(catalog).set(id, null); // not to be asked again
          },
        ),
      ),
    );
  }

  /** Keeps a record the change feed brought (`catalog` as its body names it). */
  put(catalog, id, body) {
    if (!catalog || !id) return;
    if (!this.records.has(catalog)) this.records.set(catalog, new Map());
    this.records.get(catalog).set(id, body);
  }

  /** The record's name (else its xref, else a short id). */
  name(catalog, id) {
    if (!id) return '';
    const record = this.records.get(catalog)?.get(id);
    return record?.name || record?.xref || shortId(id);
  }
}

// ---------------------------------------------------------------------------
// Workspaces

const PAGE = 25;

async function workspacesView(view, query, alive) {
  const page = Math.max(1, Number(query.get('page')) || 1);
  const { data, total } = await api.get('/workspaces', { limit: PAGE, offset: (page - 1) * PAGE }, { withTotal: true });
  const org = await organizationLabels(data.flatMap((w) => [w.body.parties?.client?.id, w.body.parties?.vendor?.id]));
  if (!alive()) return;
  const pages = Math.max(1, Math.ceil(total / PAGE));
  const rows = data.map((w) => {
    const href = `#/workspaces/${encodeURIComponent(w.id)}`;
    return h(
      'tr',
      { class: 'row-link', on: { click: (e) => e.target.closest('a') || go(href) } },
      h('td', {}, h('a', { href }, w.body.description || h('em', {}, 'No description')), stateMark(w.body.state)),
      h('td', {}, org(w.body.parties?.client?.id), partyRef(w.body.parties?.client)),
      h('td', {}, org(w.body.parties?.vendor?.id), partyRef(w.body.parties?.vendor)),
      h('td', { class: 'mono muted', title: w.id }, shortId(w.id)),
    );
  });
  view.replaceChildren(
    pageHeader('Workspaces', { subtitle: 'The inspection workspaces your account can see.' }),
    h(
      'div',
      { class: 'card results' },
      h('div', { class: 'results-head' }, h('p', { class: 'results-count' }, total ? `${total} workspace${total === 1 ? '' : 's'}` : 'No workspaces yet.'), pager(page, pages, (n) => hashWith('#/workspaces', { page: n === 1 ? '' : n }))),
      data.length ? table(['Description', 'Client', 'Vendor', 'Id'], rows, { label: 'Workspaces' }) : null,
    ),
  );
}

/** A workspace that is not active yet (its invitation pending) or declined. */
function stateMark(state) {
  const text = { pending: 'invitation pending', declined: 'invitation declined' }[state];
  return text ? h('span', { class: 'muted' }, ` (${text})`) : null;
}

function partyRef(party) {
  return party?.xref ? h('span', { class: 'muted' }, ` (${party.xref})`) : null;
}

const JOB_STATUSES = ['pending', 'active', 'complete', 'cancelled'];

async function workspaceView(view, workspaceId, query, alive) {
  const ws = `/workspaces/${encodeURIComponent(workspaceId)}`;
  const page = Math.max(1, Number(query.get('page')) || 1);
  const status = JOB_STATUSES.includes(query.get('status')) ? query.get('status') : '';
  const [workspace, jobs] = await Promise.all([
    api.get(ws),
    api.get(`${ws}/jobs`, { limit: PAGE, offset: (page - 1) * PAGE, status }, { withTotal: true }),
  ]);
  const names = new CatalogNames(workspaceId);
  const bodies = jobs.data.map((j) => j.body);
  const [org] = await Promise.all([
    organizationLabels([workspace.body.parties?.client?.id, workspace.body.parties?.vendor?.id]),
    names.load({
      locations: bodies.map((b) => b.location),
      products: bodies.map((b) => b.cargo?.product),
      uom: bodies.map((b) => b.cargo?.uom),
      transports: bodies.flatMap((b) => b.transports ?? []),
    }),
  ]);
  if (!alive()) return;

  const rows = jobs.data.map(({ id, body }) => {
    const href = `#/workspaces/${encodeURIComponent(workspaceId)}/jobs/${encodeURIComponent(id)}`;
    return h(
      'tr',
      { class: 'row-link', on: { click: (e) => e.target.closest('a') || go(href) } },
      h('td', {}, h('a', { href }, body.xref || body.refNumber || shortId(id)), body.refNumber && body.xref ? h('div', { class: 'muted small' }, body.refNumber) : null),
      h('td', {}, statusBadge(body.status)),
      h('td', {}, orDash(body.activity)),
      h('td', { class: 'nowrap' }, fmt.dateTime(body.eta) || dash),
      h('td', {}, names.name('locations', body.location) || dash),
      h('td', {}, cargoText(body.cargo, names) || dash),
      h('td', {}, (body.transports ?? []).map((t) => names.name('transports', t)).join(', ') || dash),
    );
  });
  const filter = h(
    'select',
    { name: 'status', 'aria-label': 'Job status', on: { change: (e) => go(hashWith(`#/workspaces/${encodeURIComponent(workspaceId)}`, { status: e.target.value })) } },
    [['', 'All statuses'], ...JOB_STATUSES.map((s) => [s, s])].map(([v, label]) => h('option', { value: v, selected: status === v }, label)),
  );
  const pages = Math.max(1, Math.ceil(jobs.total / PAGE));
  const p = workspace.body.parties ?? {};
  view.replaceChildren(
    pageHeader(workspace.body.description || 'Workspace', {
      crumbs: [['Workspaces', '#/workspaces'], [workspace.body.description || shortId(workspaceId)]],
    }),
    h(
      'div',
      { class: 'card' },
      definitionList([
        ['Client', [org(p.client?.id), partyRef(p.client)]],
        ['Vendor', [org(p.vendor?.id), partyRef(p.vendor)]],
        ['State', workspace.body.state ?? 'active'],
        ['Workspace id', h('span', { class: 'mono' }, workspaceId)],
      ]),
    ),
    h(
      'section',
      { class: 'card results', 'aria-labelledby': 'jobs-title' },
      h('div', { class: 'results-head' }, h('h2', { id: 'jobs-title' }, 'Jobs'), h('div', { class: 'results-tools' }, h('span', { class: 'results-count' }, `${jobs.total} job${jobs.total === 1 ? '' : 's'}`), filter)),
      jobs.data.length ? table(['Job', 'Status', 'Activity', 'ETA', 'Location', 'Cargo', 'Transport'], rows, { label: 'Jobs' }) : empty(status ? `No ${status} jobs.` : 'No jobs in this workspace yet.'),
      pager(page, pages, (n) => hashWith(`#/workspaces/${encodeURIComponent(workspaceId)}`, { status, page: n === 1 ? '' : n })),
    ),
  );
}

function cargoText(cargo, names) {
  if (!cargo) return '';
  const product = names.name('products', cargo.product);
  const quantity = cargo.quantity !== undefined && cargo.quantity !== null ? `${fmt.number(cargo.quantity)} ${names.name('uom', cargo.uom)}`.trim() : '';
  return [product, quantity].filter(Boolean).join(' · ');
}

// ---------------------------------------------------------------------------
// A job and its documents

async function jobView(view, workspaceId, jobId, alive) {
  const ws = `/workspaces/${encodeURIComponent(workspaceId)}`;
  const base = `${ws}/jobs/${encodeURIComponent(jobId)}`;
  const changes = `/v2/workspaces/${encodeURIComponent(workspaceId)}/changes`;
  // The feed's head before the lists are read: the live stream goes on from
  // there, so no change made in between is missed (one seen in a list and again
  // in the stream is applied twice, to the same end).
  const cursor = await api.get(changes, { since: 'now', limit: 1, types: LIVE_TYPES.join(',') }).then(
    (page) => page.next,
    (err) => {
      if (err.status === 401) throw err;
      console.error(err);
      return null;
    },
  );
  const lists = () =>
    Promise.all([
      api.get(base),
      api.get(`${base}/load-port-information`),
      api.get(`${base}/quantity`),
      api.get(`${base}/quality`),
      api.get(`${base}/timelog`),
      api.get(`${base}/files`),
    ]);
  const [workspace, [job, lpi, quantity, quality, timelog, files]] = await Promise.all([api.get(ws), lists()]);
  const names = new CatalogNames(workspaceId);
  // Everything of the job the page shows, by kind: {id, body} by id (the job: its body).
  const state = { job, docs: {}, files: null };
  const setDocs = (lists) => {
    for (const [kind, docs] of Object.entries(lists)) state.docs[kind] = new Map(docs.map((d) => [d.id, d]));
  };
  setDocs({ loadPortInformation: lpi, quantityResult: quantity, qualityResult: quality, timelog });
  const docs = (kind) => [...state.docs[kind].values()];
  const wanted = () => {
    const j = state.job;
    const measurementUoms = (list) => list.flatMap((d) => (d.body.measurements ?? []).map((m) => m.uom));
    const lpiDocs = docs('loadPortInformation');
    const quantityDocs = docs('quantityResult');
    return {
      locations: [j.location, ...lpiDocs.map((d) => d.body.portOfLoading)],
      products: [j.cargo?.product],
      uom: [j.cargo?.uom, ...measurementUoms(lpiDocs), ...measurementUoms(quantityDocs), ...quantityDocs.map((d) => d.body.meanTemp?.uom)],
      transports: j.transports ?? [],
      eventTypes: docs('timelog').map((d) => d.body.type),
      vcfTable: quantityDocs.map((d) => d.body.vcfTable),
    };
  };
  const [org] = await Promise.all([organizationLabels([job.client, job.vendor]), names.load(wanted())]);
  if (!alive()) return;

  const indicator = liveIndicator();
  const header = h('div');
  const details = h('div', { class: 'card' });
  const sections = {
    loadPortInformation: section('Load port information'),
    quantityResult: section('Quantity'),
    qualityResult: section('Quality'),
    timelog: section('Time log'),
  };
  const filesSection = section('Attachments');
  const renderJob = () => {
    const j = state.job;
    const title = j.xref || j.refNumber || `Job ${shortId(jobId)}`;
    const requested = Object.entries(j.requested ?? {}).filter(([, on]) => on).map(([what]) => what);
    header.replaceChildren(
      pageHeader(title, {
        crumbs: [['Workspaces', '#/workspaces'], [workspace.body.description || shortId(workspaceId), `#/workspaces/${encodeURIComponent(workspaceId)}`], [title]],
        subtitle: h('span', {}, statusBadge(j.status), ' ', j.activity ? `${j.activity} · ` : '', names.name('locations', j.location) || 'no location'),
        actions: [indicator.el],
      }),
    );
    details.replaceChildren(
      definitionList([
        ['Status', statusBadge(j.status)],
        ['Activity', j.activity],
        ['ETA', fmt.dateTime(j.eta)],
        ['ETC', fmt.dateTime(j.etc)],
        ['Location', names.name('locations', j.location)],
        ['Cargo', cargoText(j.cargo, names)],
        ['Transport', (j.transports ?? []).map((t) => names.name('transports', t)).join(', ')],
        ['Requested', requested.length ? requested.map((r) => badge(r, 'info')) : 'nothing'],
        ['Reference', j.refNumber],
        ['Trip number', j.tripNumber],
        ['Client', org(j.client)],
        ['Vendor', org(j.vendor)],
        ['Notes', j.notes ? h('span', { class: 'prewrap' }, j.notes) : null],
      ]),
    );
  };
  const RENDER = {
    loadPortInformation: () => loadPortInformation(docs('loadPortInformation'), names),
    quantityResult: () => quantityComparison(docs('quantityResult'), names),
    qualityResult: () => qualityTable(docs('qualityResult')),
    timelog: () => timeline(docs('timelog'), names),
  };
  const renderKind = (kind) => {
    // Everything but the section's heading is drawn anew.
    const card = sections[kind];
    card.replaceChildren(card.firstElementChild);
    append(card, [RENDER[kind]()]);
  };
  const renderAll = () => {
    renderJob();
    for (const kind of Object.keys(sections)) renderKind(kind);
  };
  renderAll();
  view.replaceChildren(header, details, ...Object.values(sections), filesSection);
  const filesList = attachments(filesSection, `${base}/files`, files);

  // ---- Live: the workspace's changes, those of this job applied in place.
  const changed = (kind, id) => {
    if (kind === 'job') renderJob();
    else renderKind(kind);
    if (id) flashRow(kind === 'job' ? details : sections[kind], id);
  };
  // Names of catalog records the lists did not hold: fetched, then drawn again.
  const named = (kind, id) => {
    changed(kind, id);
    if (names.knows(wanted())) return;
    names.ensure(wanted()).then(
      () => alive() && changed(kind, null),
      (err) => console.error(err),
    );
  };
  const apply = (change) => {
    const record = change.record;
    const [entity, verb] = String(change.type).split('.');
    if (!record || !verb) return;
    if (entity === 'catalogItem') {
      if (verb !== 'deleted') names.put(record.body?.catalog, record.id, record.body);
      if (verb === 'updated') renderAll();
      return;
    }
    if (entity === 'job') {
      if (record.id !== jobId) return;
      if (verb === 'deleted') {
        live.stop();
        indicator.set('stopped');
        messages.replaceChildren(message('warning', 'This job was deleted', `${change.actor ? `${change.actor} deleted it` : 'It was deleted'} at ${fmt.dateTime(change.occurred_at)}; what the page shows is its last state.`));
        return;
      }
      state.job = record.body;
      named('job', null);
      return;
    }
    if (entity === 'attachment') {
      const mine = record.body?.document === jobId;
      if (verb === 'deleted' || !mine) filesList.remove(record.id);
      else filesList.put(fileDescriptor(record), verb === 'created');
      return;
    }
    const list = state.docs[entity];
    if (!list) return;
    if (verb === 'deleted' || record.body?.parent !== jobId) {
      if (list.delete(record.id)) renderKind(entity);
      return;
    }
    list.set(record.id, { id: record.id, body: record.body });
    named(entity, record.id);
  };
  // 410 cursor_expired: the changes since the cursor are gone; read the lists again.
  const reload = async () => {
    const [freshJob, freshLpi, freshQuantity, freshQuality, freshTimelog, freshFiles] = await lists();
    if (!alive()) return;
    state.job = freshJob;
    setDocs({ loadPortInformation: freshLpi, quantityResult: freshQuantity, qualityResult: freshQuality, timelog: freshTimelog });
    await names.ensure(wanted());
    if (!alive()) return;
    renderAll();
    filesList.replace(freshFiles);
  };
  const live = api.follow(changes, {
    since: cursor,
    types: LIVE_TYPES,
    onChange: (change) => alive() && apply(change),
    onState: (s, err) => indicator.set(s, err),
    onExpired: reload,
  });
  onLeave(() => live.stop());
}

/** The change types a job's page follows: its documents and files, and the names they use. */
const LIVE_TYPES = ['job.*', 'loadPortInformation.*', 'quantityResult.*', 'qualityResult.*', 'timelog.*', 'attachment.*', 'catalogItem.*'];

/** The older `files` descriptor of an attachment record of the change feed. */
function fileDescriptor(record) {
  const b = record.body ?? {};
  return { id: record.id, caption: b.caption, location: b.location, body: { format: b.format, size: b.size, sha256: b.sha256 } };
}

/** Marks what a change touched for a moment (a row, a time log entry) in `root`. */
function flashRow(root, id) {
  for (const el of root.querySelectorAll(`[data-id="${CSS.escape(id)}"]`)) el.classList.add('live-changed');
}

/** The small "live" mark of a page following the change feed: connected, reconnecting, off. */
function liveIndicator() {
  const LABELS = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', failed: 'Not live', stopped: 'Not live' };
  const text = h('span', { class: 'live-text' });
  const el = h('span', { class: 'live', role: 'status', 'data-testid': 'live' }, h('span', { class: 'live-dot', 'aria-hidden': 'true' }), text);
  const set = (state, err) => {
    el.dataset.state = state;
    text.textContent = LABELS[state] ?? state;
    el.title =
      state === 'live'
        ? 'Changes made elsewhere appear here as they happen.'
        : err
          ? `${LABELS[state]}: ${err.message}`
          : state === 'connecting' || state === 'reconnecting'
            ? 'Connecting to the change feed…'
            : 'Changes made elsewhere are not shown until the page is loaded again.';
  };
  set('connecting');
  return { el, set };
}

function loadPortInformation(docs, names) {
  if (!docs.length) return empty('No load port information yet.');
  return docs.map(({ id, body }) =>
    h(
      'div',
      { class: 'subsection', data: { id } },
      definitionList([
        ['Bill of lading date', fmt.dateTime(body.billOfLadingDate)],
        ['Port of loading', names.name('locations', body.portOfLoading)],
      ]),
      body.measurements?.length
        ? table(
            ['Code', 'Measurement', 'Value', 'Unit'],
            body.measurements.map((m) => h('tr', {}, h('td', { class: 'mono' }, orDash(m.code)), h('td', {}, orDash(m.name)), h('td', { class: 'num' }, fmt.number(m.value) || dash), h('td', {}, names.name('uom', m.uom) || dash))),
            { label: 'Load port measurements' },
          )
        : null,
    ),
  );
}

const yesNo = (v) => (v === true ? 'Yes' : v === false ? 'No' : '');

function quantityComparison(docs, names) {
  if (!docs.length) return empty('No quantity results yet.');
  const source = docs.find((d) => d.body.direction === 'source')?.body;
  const destination = docs.find((d) => d.body.direction === 'destination')?.body;
  const withMethod = (value, method, unit = '') => (value === undefined || value === null ? '' : `${fmt.number(value)}${unit}${method ? ` (${method})` : ''}`);
  const measurement = (doc, key) => doc?.measurements?.find((m) => (m.code ?? m.name) === key);
  const keys = [];
  for (const doc of [source, destination]) for (const m of doc?.measurements ?? []) if (!keys.includes(m.code ?? m.name)) keys.push(m.code ?? m.name);

  const rows = [
    ['Date', (d) => fmt.dateTime(d?.date)],
    ['Active shore tank', (d) => yesNo(d?.activeShoreTank)],
    ...keys.map((key) => {
      const label = measurement(source, key)?.name ?? measurement(destination, key)?.name ?? key;
      return [
        label === key ? key : `${label} (${key})`,
        (d) => {
          const m = measurement(d, key);
          return m && m.value !== undefined ? `${fmt.number(m.value)} ${names.name('uom', m.uom)}`.trim() : '';
        },
        key,
      ];
    }),
    ['Water', (d) => withMethod(d?.waterPerc, d?.waterMethod, ' %')],
    ['Sediment', (d) => withMethod(d?.sedimentPerc, d?.sedimentMethod, ' %')],
    ['Sediment and water', (d) => withMethod(d?.sedimentWaterPerc, null, ' %')],
    ['Density at 15 °C', (d) => withMethod(d?.density15c, d?.densityMethod)],
    ['Mean temperature', (d) => (d?.meanTemp?.value !== undefined ? `${fmt.number(d.meanTemp.value)} ${names.name('uom', d.meanTemp.uom)}`.trim() : '')],
    ['VCF table', (d) => names.name('vcfTable', d?.vcfTable)],
    ['API gravity', (d) => fmt.number(d?.api)],
  ].filter(([, value]) => value(source) || value(destination));

  const difference = (key) => {
    const a = measurement(source, key)?.value;
    const b = measurement(destination, key)?.value;
    if (typeof a !== 'number' || typeof b !== 'number') return '';
    const diff = b - a;
    const pct = a ? ` (${((diff / a) * 100).toFixed(2)} %)` : '';
    return `${diff > 0 ? '+' : ''}${fmt.number(Number(diff.toFixed(6)))}${pct}`;
  };
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'table compare', 'aria-label': 'Quantity: source and destination' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, ''), h('th', { scope: 'col' }, 'Source'), h('th', { scope: 'col' }, 'Destination'), h('th', { scope: 'col' }, 'Difference'))),
      h(
        'tbody',
        {},
        rows.map(([label, value, key]) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row' }, label),
            h('td', { class: source ? '' : 'muted' }, source ? value(source) || dash : 'no result'),
            h('td', { class: destination ? '' : 'muted' }, destination ? value(destination) || dash : 'no result'),
            h('td', { class: 'num muted' }, key ? difference(key) : ''),
          ),
        ),
      ),
    ),
  );
}

function qualityTable(docs) {
  if (!docs.length) return empty('No quality results yet.');
  const sorted = [...docs].sort((a, b) => (a.body.setNumber ?? 0) - (b.body.setNumber ?? 0) || (a.body.testNumber ?? 0) - (b.body.testNumber ?? 0));
  const offSpec = sorted.filter((d) => d.body.isOffSpec).length;
  const ref = (r) => (r && typeof r === 'object' ? r.name || r.xref || shortId(r.id) : r);
  const rows = sorted.map(({ id, body }) => {
    const op = body.resultOperator && body.resultOperator !== 'eq' ? `${fmt.OPERATORS[body.resultOperator]} ` : '';
    const flags = [
      body.isOffSpec ? badge('Off spec', 'bad') : null,
      body.isRetestNeeded ? badge('Retest', 'warn') : null,
      body.isPassed ? badge('Passed', 'ok') : null,
      body.isPreviouslySubmitted ? badge('Resubmitted', 'muted') : null,
    ].filter(Boolean);
    return h(
      'tr',
      { class: body.isOffSpec ? 'offspec' : '', data: { id, offspec: String(Boolean(body.isOffSpec)) } },
      h('td', { class: 'mono nowrap' }, `${body.setNumber ?? dash}.${body.testNumber ?? dash}`),
      h('td', {}, ref(body.test) || body.propertyName || dash, body.notes ? h('div', { class: 'muted small' }, body.notes) : null),
      h('td', { class: 'nowrap' }, orDash(ref(body.method))),
      h('td', { class: 'num nowrap' }, `${op}${body.result ?? dash}`, h('span', { class: 'muted' }, ` ${ref(body.uom) ?? ''}`)),
      h('td', { class: 'nowrap' }, orDash(body.sample?.location), body.sample?.sealNumber ? h('div', { class: 'muted small' }, `seal ${body.sample.sealNumber}`) : null),
      h('td', {}, badge(body.status, body.status === 'confirmed' ? 'ok' : 'muted')),
      h('td', { class: 'nowrap' }, fmt.dateTime(body.date) || dash),
      h('td', {}, flags.length ? flags : dash),
    );
  });
  return [
    offSpec ? h('p', { class: 'callout callout-bad' }, `${offSpec} result${offSpec === 1 ? ' is' : 's are'} off specification.`) : null,
    table(['Set.test', 'Test', 'Method', 'Result', 'Sample', 'Status', 'Date', 'Flags'], rows, { class: 'quality', label: 'Quality results' }),
  ];
}

function timeline(docs, names) {
  if (!docs.length) return empty('No time log yet.');
  const events = docs
    .map(({ id, body }) => ({ id, ...body, from: Date.parse(body.start), to: body.end ? Date.parse(body.end) : null }))
    .sort((a, b) => a.from - b.from || (a.to ?? a.from) - (b.to ?? b.from));
  const first = events[0].from;
  const last = Math.max(...events.map((e) => e.to ?? e.from));
  const span = Math.max(last - first, 60_000);
  const at = (t) => `${(((t - first) / span) * 100).toFixed(3)}%`;
  const timeOf = (t) => fmt.dateTime(new Date(t).toISOString()).replace(' UTC', '');

  // Midnights (UTC) inside the span, drawn as lines across every row.
  const midnights = [];
  const day = new Date(first);
  day.setUTCHours(0, 0, 0, 0);
  for (day.setUTCDate(day.getUTCDate() + 1); day.getTime() < last; day.setUTCDate(day.getUTCDate() + 1)) midnights.push(day.getTime());
  const ticks = (labelled) =>
    midnights.map((t) => {
      const tick = h('span', { class: 'tl-tick' }, labelled ? h('span', { class: 'tl-tick-label' }, fmt.dateOnly(new Date(t).toISOString())) : null);
      tick.style.left = at(t);
      return tick;
    });
  const axis = h('div', { class: 'tl-axis', 'aria-hidden': 'true' }, h('span', { class: 'tl-axis-start' }, timeOf(first)), h('span', { class: 'tl-axis-end' }, `${timeOf(last)} UTC`));

  const rows = events.map((e) => {
    const mark = h('span', { class: e.to === null ? 'tl-point' : 'tl-bar' });
    mark.style.left = at(e.from);
    if (e.to !== null) mark.style.width = `${(((e.to - e.from) / span) * 100).toFixed(3)}%`;
    const end = timeOf(e.to ?? e.from);
    const sameDay = end.slice(0, 10) === timeOf(e.from).slice(0, 10);
    const when = e.to === null ? timeOf(e.from) : `${timeOf(e.from)} – ${sameDay ? end.slice(11) : end} · ${fmt.duration(e.to - e.from)}`;
    return h(
      'li',
      { class: `tl-row tl-${e.category}`, data: { id: e.id } },
      h('div', { class: 'tl-label' }, h('span', { class: 'tl-type' }, names.name('eventTypes', e.type)), ' ', badge(e.category, e.category === 'delay' ? 'warn' : 'info')),
      h('div', { class: 'tl-track' }, ticks(false), mark),
      h('div', { class: 'tl-when' }, when, e.notes ? h('div', { class: 'muted small' }, e.notes) : null),
    );
  });
  return h(
    'div',
    { class: 'timeline' },
    h('div', { class: 'tl-row tl-head' }, h('div', { class: 'tl-label' }), h('div', { class: 'tl-track tl-scale' }, ticks(true), axis), h('div', { class: 'tl-when' })),
    h('ol', { class: 'tl-list', 'aria-label': 'Time log, ordered by start' }, rows),
  );
}

// ---------------------------------------------------------------------------
// Attachments: list, download, upload with progress, delete

function attachments(container, collection, initial) {
  const list = h('div', { class: 'files' });
  const status = h('p', { class: 'upload-status', role: 'status', 'aria-live': 'polite' });
  const progress = h('progress', { max: 100, value: 0, class: 'upload-progress', 'aria-label': 'Upload progress', hidden: true });
  const input = h('input', { type: 'file', name: 'file' });
  const button = h('button', { type: 'submit', class: 'button button-primary' }, 'Upload');
  const form = h('form', { class: 'upload', 'aria-label': 'Upload an attachment' }, field('Attach a file', input), button, h('div', { class: 'upload-meter' }, progress, status));

  // The files shown, by id, in the order they came (the list's, then new ones last).
  let current = new Map();
  let changedId = null;
  const show = () => {
    const files = [...current.values()];
    if (!files.length) {
      list.replaceChildren(empty('No attachments yet.'));
      return;
    }
    const rows = files.map((f) => {
      const download = h('button', { type: 'button', class: 'button button-small' }, 'Download');
      download.addEventListener('click', async () => {
        download.disabled = true;
        try {
          const size = await api.download(`${collection}/${encodeURIComponent(f.id)}/content`, f.caption);
          status.textContent = `Downloaded ${f.caption} (${fmt.bytes(size)}).`;
        } catch (err) {
          showError(err, { title: `Could not download ${f.caption}` });
        } finally {
          download.disabled = false;
        }
      });
      const remove = h('button', { type: 'button', class: 'button button-small button-ghost' }, 'Delete');
      remove.addEventListener('click', async () => {
        if (!window.confirm(`Delete the attachment ${f.caption}? This cannot be undone.`)) return;
        remove.disabled = true;
        try {
          await api.request('DELETE', `${collection}/${encodeURIComponent(f.id)}`);
          status.textContent = `Deleted ${f.caption}.`;
          await refresh();
        } catch (err) {
          remove.disabled = false;
          showError(err, { title: `Could not delete ${f.caption}` });
        }
      });
      return h(
        'tr',
        { data: { id: f.id } },
        h('td', {}, h('span', { class: 'file-name' }, f.caption)),
        h('td', { class: 'muted' }, f.body?.format ?? dash),
        h('td', { class: 'num nowrap' }, fmt.bytes(f.body?.size)),
        h('td', { class: 'mono muted', title: f.body?.sha256 ?? '' }, f.body?.sha256 ? `${f.body.sha256.slice(0, 12)}…` : dash),
        h('td', { class: 'nowrap actions-cell' }, download, ' ', remove),
      );
    });
    list.replaceChildren(table(['Name', 'Type', 'Size', 'SHA-256', ''], rows, { label: 'Attachments', class: 'files-table' }));
    if (changedId) flashRow(list, changedId);
    changedId = null;
  };
  const replace = (files) => {
    current = new Map(files.map((f) => [f.id, f]));
    show();
  };
  const refresh = async () => replace(await api.get(collection));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const file = input.files?.[0];
    if (!file) {
      status.textContent = 'Choose a file first.';
      return;
    }
    clearMessages();
    button.disabled = true;
    input.disabled = true;
    progress.hidden = false;
    progress.value = 0;
    status.textContent = `Uploading ${file.name}…`;
    try {
      const stored = await api.upload(collection, file, (loaded, total) => {
        const pct = total ? Math.min(100, Math.round((loaded / total) * 100)) : 0;
        progress.value = pct;
        status.textContent = `Uploading ${file.name}: ${pct} % (${fmt.bytes(loaded)} of ${fmt.bytes(total)})`;
      });
      progress.value = 100;
      status.textContent = `Uploaded ${stored.caption} (${fmt.bytes(stored.body?.size)}).`;
      form.reset();
      await refresh();
    } catch (err) {
      progress.hidden = true;
      status.textContent = `The upload of ${file.name} failed.`;
      showError(err, { title: `Could not upload ${file.name}` });
    } finally {
      button.disabled = false;
      input.disabled = false;
    }
  });

  append(container, [list, form]);
  replace(initial);
  return {
    replace,
    /** A file added or changed elsewhere (the change feed); `fresh` marks it for a moment. */
    put(file, fresh) {
      current.set(file.id, file);
      if (fresh) changedId = file.id;
      show();
    },
    /** A file deleted elsewhere. */
    remove(id) {
      if (current.delete(id)) show();
    },
  };
}
