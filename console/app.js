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
    if (id === 'new' && !sub) return workspaceFormView(view, null, alive);
    if (!sub) return workspaceView(view, id, query, alive);
    if (sub === 'edit' && !subId) return workspaceFormView(view, id, alive);
    if (sub === 'jobs' && subId === 'new' && !extra) return jobFormView(view, id, null, alive);
    if (sub === 'jobs' && subId && !extra) return jobView(view, id, subId, alive);
    if (sub === 'jobs' && subId && extra === 'edit' && parts.length === 5) return jobFormView(view, id, subId, alive);
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

// The app starts at the end of this module (`start()`), once every constant
// the views use is initialised.

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

/** Previous / next links; `pages` is null when the server capped its count (more than it counts). */
function pager(page, pages, hashOf) {
  if (pages !== null && pages <= 1 && page <= 1) return null;
  const more = pages === null;
  if (more) pages = page + 1;
  return h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    page > 1 ? h('a', { class: 'button button-small', href: hashOf(page - 1), rel: 'prev' }, '‹ Previous') : h('span', { class: 'button button-small', 'aria-disabled': 'true' }, '‹ Previous'),
    h('span', { class: 'pager-pos' }, more ? `Page ${page}` : `Page ${page} of ${pages}`),
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

  /**
   * The record a typed text names, as a reference to write: the id of the
   * record whose name or xref it is (any case), an id as typed, else
   * `{name}`, which the API creates.
   */
  resolve(catalog, text) {
    const wanted = text.trim().toLowerCase();
    const records = [...(this.records.get(catalog) ?? [])].filter(([, r]) => r);
    const hit = records.find(([, r]) => r.name?.toLowerCase() === wanted) ?? records.find(([, r]) => r.xref?.toLowerCase() === wanted);
    if (hit) return hit[0];
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(wanted)) return text.trim();
    return { name: text.trim() };
  }

  /** The text a form shows for a reference: the record's name, else its xref, else the id itself. */
  label(catalog, id) {
    if (!id) return '';
    const record = this.records.get(catalog)?.get(id);
    return record?.name || record?.xref || id;
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
  const listOf = () => api.get('/workspaces', { limit: PAGE, offset: (page - 1) * PAGE }, { withTotal: true });
  const [list, invitations] = await Promise.all([listOf(), api.get('/v2/invitations', { limit: INVITATIONS }, { withTotal: true })]);
  const parties = (envelopes) => envelopes.flatMap((w) => [w.body.parties?.client?.id, w.body.parties?.vendor?.id]);
  const org = await organizationLabels([...parties(list.data), ...parties(invitations.data)]);
  if (!alive()) return;

  const workspacesCard = ({ data, total, capped }, org) => {
    const pages = capped ? null : Math.max(1, Math.ceil(total / PAGE));
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
    return h(
      'div',
      { class: 'card results' },
      h('div', { class: 'results-head' }, h('p', { class: 'results-count' }, total ? `${total}${capped ? '+' : ''} workspace${total === 1 ? '' : 's'}` : 'No workspaces yet.'), pager(page, pages, (n) => hashWith('#/workspaces', { page: n === 1 ? '' : n }))),
      data.length ? table(['Description', 'Client', 'Vendor', 'Id'], rows, { label: 'Workspaces' }) : null,
    );
  };
  let card = workspacesCard(list, org);

  // After an answer both lists are read again; after a refusal (answered
  // meanwhile, or withdrawn) only the workspaces, so the refusal stays in place.
  const reloadWorkspaces = async () => {
    const fresh = await listOf();
    const names = await organizationLabels(parties(fresh.data));
    if (!alive()) return;
    const next = workspacesCard(fresh, names);
    card.replaceWith(next);
    card = next;
  };
  const answered = async (text) => {
    await workspacesView(view, query, alive);
    if (!alive()) return;
    notice(text);
    // Focus stays in the list: on the next invitation, else on the page's title.
    (view.querySelector('.invitation button') ?? view.querySelector('h1'))?.focus();
  };

  view.replaceChildren(
    pageHeader('Workspaces', {
      subtitle: 'The inspection workspaces your account can see.',
      actions: [h('a', { class: 'button button-primary', href: '#/workspaces/new' }, 'New workspace')],
    }),
    ...workspaceInvitations(invitations, org, { answered, refused: () => reloadWorkspaces().catch((err) => showError(err)) }),
    card,
  );
}

/** A workspace's state as its page says it. */
const STATE_TEXTS = {
  active: 'active',
  pending: 'invitation pending: jobs can be recorded once the other party accepts',
  declined: 'invitation declined: the other party refused this workspace; no jobs can be recorded in it',
};

/** A workspace that is not active yet (its invitation pending) or declined. */
function stateMark(state) {
  const text = { pending: 'invitation pending', declined: 'invitation declined' }[state];
  return text ? h('span', { class: 'muted' }, ` (${text})`) : null;
}

/** Deletes an empty workspace, after a confirmation naming it; the API's refusal (it holds jobs) is shown. */
function deleteWorkspaceButton(workspaceId, description) {
  const what = `the workspace “${description || shortId(workspaceId)}” with its catalogs`;
  const button = h('button', { type: 'button', class: 'button button-danger' }, 'Delete workspace');
  button.addEventListener('click', async () => {
    if (!confirmDelete(what)) return;
    button.disabled = true;
    try {
      await api.request('DELETE', `/v2/workspaces/${encodeURIComponent(workspaceId)}`);
      setFlash(`Deleted ${what}.`);
      go('#/workspaces');
    } catch (err) {
      button.disabled = false;
      showError(err, { title: err.status === 409 ? 'The workspace was not deleted' : undefined });
    }
  });
  return button;
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
  // Past 1,000 matches the server says "1000, capped": the count shows
  // "1000+" and the pager goes on while pages are full.
  const pages = jobs.capped ? null : Math.max(1, Math.ceil(jobs.total / PAGE));
  const p = workspace.body.parties ?? {};
  const state = workspace.body.state ?? 'active';
  const active = state === 'active';
  view.replaceChildren(
    pageHeader(workspace.body.description || 'Workspace', {
      crumbs: [['Workspaces', '#/workspaces'], [workspace.body.description || shortId(workspaceId)]],
      actions: [
        active ? h('a', { class: 'button button-primary', href: `#/workspaces/${encodeURIComponent(workspaceId)}/jobs/new` }, 'New job') : null,
        h('a', { class: 'button', href: `#/workspaces/${encodeURIComponent(workspaceId)}/edit` }, 'Edit description'),
        deleteWorkspaceButton(workspaceId, workspace.body.description),
      ],
    }),
    h(
      'div',
      { class: 'card' },
      definitionList([
        ['Client', [org(p.client?.id), partyRef(p.client)]],
        ['Vendor', [org(p.vendor?.id), partyRef(p.vendor)]],
        ['State', STATE_TEXTS[state] ?? state],
        ['Workspace id', h('span', { class: 'mono' }, workspaceId)],
      ]),
    ),
    h(
      'section',
      { class: 'card results', 'aria-labelledby': 'jobs-title' },
      h('div', { class: 'results-head' }, h('h2', { id: 'jobs-title' }, 'Jobs'), h('div', { class: 'results-tools' }, h('span', { class: 'results-count' }, `${jobs.total}${jobs.capped ? '+' : ''} job${jobs.total === 1 ? '' : 's'}`), filter)),
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
  const facts = h('div');
  const statusBox = h('div', { class: 'status-actions no-print', role: 'group', 'aria-label': 'Change the job status' });
  const statusNote = h('div', { class: 'status-note' });
  const details = h('div', { class: 'card' }, statusBox, statusNote, facts);
  const sections = Object.fromEntries(Object.keys(KINDS).map((kind) => [kind, editableSection(KINDS[kind].title)]));
  const filesSection = section('Attachments');
  const jobTitle = () => state.job.xref || state.job.refNumber || `Job ${shortId(jobId)}`;
  const wsHash = `#/workspaces/${encodeURIComponent(workspaceId)}`;
  const jobHash = `${wsHash}/jobs/${encodeURIComponent(jobId)}`;

  const printButton = h('button', { type: 'button', class: 'button', on: { click: () => window.print() } }, 'Print report');
  const deleteButton = h('button', { type: 'button', class: 'button button-danger' }, 'Delete job');
  deleteButton.addEventListener('click', async () => {
    if (!confirmDelete(`the job ${jobTitle()}`)) return;
    deleteButton.disabled = true;
    try {
      await api.request('DELETE', base);
      setFlash(`Job ${jobTitle()} was deleted.`);
      go(wsHash);
    } catch (err) {
      deleteButton.disabled = false;
      showError(err, { title: err.status === 409 ? `The job ${jobTitle()} was not deleted` : undefined });
    }
  });

  // The status changes the API allows from here, as actions; a refusal shows beside them.
  const changeStatus = async (next, button) => {
    statusNote.replaceChildren();
    button.disabled = true;
    try {
      state.job = await api.request('PATCH', base, { json: { status: next } });
      renderJob();
      notice(`Job ${jobTitle()} is now ${state.job.status}.`);
      statusBox.querySelector('button')?.focus();
    } catch (err) {
      button.disabled = false;
      statusNote.replaceChildren(errorMessage(err, `The job was not moved to ${next}`));
      button.focus();
    }
  };
  const renderJob = () => {
    const j = state.job;
    const title = jobTitle();
    const requested = Object.entries(j.requested ?? {}).filter(([, on]) => on).map(([what]) => what);
    header.replaceChildren(
      h('div', { class: 'report-head print-only' }, h('p', {}, `Inspection job report · ${workspace.body.description || workspaceId}`), h('p', {}, `Printed ${fmt.dateTime(new Date().toISOString())}`)),
      pageHeader(title, {
        crumbs: [['Workspaces', '#/workspaces'], [workspace.body.description || shortId(workspaceId), wsHash], [title]],
        subtitle: h('span', {}, statusBadge(j.status), ' ', j.activity ? `${j.activity} · ` : '', names.name('locations', j.location) || 'no location'),
        actions: [indicator.el, h('a', { class: 'button', href: `${jobHash}/edit` }, 'Edit job'), printButton, deleteButton],
      }),
    );
    statusBox.replaceChildren();
    append(statusBox, [
      h('span', { class: 'field-label' }, 'Status'),
      statusBadge(j.status),
      (JOB_TRANSITIONS[j.status] ?? []).map(([next, label]) => {
        const button = h('button', { type: 'button', class: 'button button-small', data: { status: next } }, label);
        button.addEventListener('click', () => changeStatus(next, button));
        return button;
      }),
    ]);
    facts.replaceChildren(
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
    timelog: () => [timeline(docs('timelog'), names), timelogTable(docs('timelog'), names)],
  };

  // ---- Editors of the job's records, one open per section at most.
  const editing = {};
  const draftPrefix = (kind) => `${drafts.key('job', workspaceId, jobId, kind)}|`;
  const editorOfDraft = (key) => (key.startsWith('side:') ? 'sides' : key);
  const refresh = async (kind) => {
    const list = await api.get(`${base}/${KINDS[kind].path}`);
    if (!alive()) return;
    state.docs[kind] = new Map(list.map((d) => [d.id, d]));
    await names.ensure(wanted());
    if (alive()) renderKind(kind);
  };
  const closeEditor = (kind) => {
    sections[kind].editor.replaceChildren();
    editing[kind] = null;
    renderKind(kind);
    sections[kind].tools.querySelector('button')?.focus();
  };
  async function openEditor(kind, key, restore = false) {
    const k = KINDS[kind];
    const catalogs = kindCatalogs(kind);
    await names.load(Object.fromEntries(catalogs.map((c) => [c, []])));
    await names.ensure(wanted());
    if (!alive()) return;
    fillCatalogLists(names, catalogs);
    const ctxFor = (draftKey) => ({
      base,
      names,
      restore,
      draftKey: `${draftPrefix(kind)}${draftKey}`,
      onClose: () => closeEditor(kind),
      onChanged: () => refresh(kind),
      onSaved: async (text) => {
        closeEditor(kind);
        notice(text);
        await refresh(kind);
        // The other side of a quantity may still hold a draft: open it again.
        if (key === 'sides' && drafts.under(draftPrefix(kind)).length && alive()) await openEditor(kind, 'sides', true);
      },
    });
    let el;
    if (key === 'sides') {
      el = h(
        'div',
        { class: 'sides' },
        k.sides.map((direction) => {
          const doc = docs(kind).find((d) => d.body.direction === direction) ?? null;
          return documentForm(kind, doc, ctxFor(`side:${direction}`), { fixed: { direction }, title: `${direction === 'source' ? 'Source' : 'Destination'} quantity` });
        }),
      );
    } else if (key.startsWith('doc:')) {
      const doc = key === 'doc:new' ? null : (state.docs[kind].get(key.slice(4)) ?? null);
      el = documentForm(kind, doc, ctxFor(doc ? key : 'doc:new'), { title: doc ? `Edit ${k.one}` : `New ${k.one}` });
    } else {
      const rowsKey = key.slice('rows:'.length);
      const title = kind === 'timelog' ? 'Time log' : rowsKey === 'new' ? 'New quality certificate' : `Quality certificate, set ${rowsKey.split(':')[1]}`;
      el = documentRows(kind, rowsKey, docs(kind), ctxFor(key), { title });
    }
    editing[kind] = key;
    sections[kind].offers.replaceChildren();
    sections[kind].editor.replaceChildren(el);
    el.querySelector('[name]')?.focus();
  }
  const open = (kind, key, restore) => openEditor(kind, key, restore).catch((err) => showError(err));

  const renderKind = (kind) => {
    // What is recorded is drawn anew; an open editor stays as it is.
    const s = sections[kind];
    s.display.replaceChildren();
    append(s.display, [RENDER[kind]()]);
    s.tools.replaceChildren(...KINDS[kind].editors(docs(kind)).map(([key, label]) => h('button', { type: 'button', class: 'button button-small', on: { click: () => open(kind, key) } }, label)));
    if (editing[kind]) return;
    s.offers.replaceChildren(
      ...drafts.under(draftPrefix(kind)).map((key) =>
        draftOffer(drafts.load(key) ?? {}, {
          restore: () => open(kind, editorOfDraft(key.slice(draftPrefix(kind).length)), true),
          discard: () => drafts.clear(key),
        }),
      ),
    );
  };
  const renderAll = () => {
    renderJob();
    for (const kind of Object.keys(sections)) renderKind(kind);
  };
  renderAll();
  view.replaceChildren(header, details, ...Object.values(sections).map((s) => s.card), filesSection);
  const filesList = attachments(filesSection, `${base}/files`, files);

  // ---- Live: the workspace's changes, those of this job applied in place.
  const changed = (kind, id) => {
    if (kind === 'job') renderJob();
    else renderKind(kind);
    if (id) flashRow(kind === 'job' ? details : sections[kind].display, id);
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

// ---------------------------------------------------------------------------
// Record editors. Every form that writes a record is built from a table of
// field specs (`{path, label, type, catalog, options, hint}`): one builder of
// controls, one reader and one writer of values, one grid for rows (Enter adds
// a row, Tab moves on, a pasted spreadsheet block fills it), one way of
// showing the API's error on the field it names, and one store of drafts.

/** The value at a dotted path (`meanTemp.uom`) of an object, or undefined. */
function getPath(obj, path) {
  return path.split('.').reduce((o, key) => (o === null || o === undefined ? undefined : o[key]), obj);
}

function setPath(obj, path, value) {
  const keys = path.split('.');
  let o = obj;
  for (const key of keys.slice(0, -1)) {
    if (!o[key] || typeof o[key] !== 'object') o[key] = {};
    o = o[key];
  }
  o[keys.at(-1)] = value;
}

/** The body without nulls and empty objects: what a create sends. */
function pruned(value) {
  if (Array.isArray(value)) return value.map(pruned);
  if (value && typeof value === 'object') {
    const out = {};
    for (const [key, v] of Object.entries(value)) {
      const p = pruned(v);
      if (p === null || p === undefined) continue;
      if (typeof p === 'object' && !Array.isArray(p) && !Object.keys(p).length) continue;
      out[key] = p;
    }
    return out;
  }
  return value;
}

/** An RFC 3339 instant as a `datetime-local` value in UTC (`2026-12-01T09:00`). */
function utcInput(text) {
  if (!text) return '';
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString().slice(0, 16);
}

/** A `datetime-local` value, read as UTC, as RFC 3339; other text is sent as typed for the API to judge. */
function fromUtcInput(value) {
  const v = value.trim().replace(' ', 'T');
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(v)) return `${v}:00Z`;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/.test(v)) return `${v}Z`;
  return v;
}

/** A typed number: `5,921.4` and `5921.4` are 5921.4; anything else is sent as typed for the API to judge. */
function numberFrom(text) {
  const v = /^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(text) ? text.replace(/,/g, '') : text;
  const n = Number(v);
  return v !== '' && Number.isFinite(n) ? n : text;
}

const OPERATOR_ALIASES = { '=': 'eq', '==': 'eq', '<': 'lt', '>': 'gt', '<=': 'lte', '≤': 'lte', '>=': 'gte', '≥': 'gte' };
const OPERATOR_OPTIONS = [['eq', '='], ['lt', '<'], ['lte', '≤'], ['gt', '>'], ['gte', '≥']];

// The spec of each control built here.
const specOf = new WeakMap();

function optionsOf(spec) {
  if (spec.type === 'bool') return [['', dash], ['true', 'Yes'], ['false', 'No']];
  const options = typeof spec.options === 'function' ? spec.options() : spec.options;
  return spec.blank === false ? options : [['', spec.blank ?? dash], ...options];
}

/** A control for `spec`, named `name` (default: its path); `label` makes it self-labelled (grid cells). */
function control(spec, name = spec.path, label = null) {
  let el;
  if (spec.type === 'textarea') el = h('textarea', { name, rows: 3 });
  else if (spec.type === 'select' || spec.type === 'bool') el = h('select', { name }, optionsOf(spec).map(([value, text]) => h('option', { value }, text)));
  else if (spec.type === 'check') el = h('input', { name, type: 'checkbox' });
  else if (spec.type === 'datetime') el = h('input', { name, type: 'datetime-local', step: 60 });
  else if (spec.type === 'number' || spec.type === 'integer') el = h('input', { name, inputmode: spec.type === 'number' ? 'decimal' : 'numeric', autocomplete: 'off', class: 'input-number' });
  else if (spec.type === 'catalog') el = h('input', { name, list: datalistId(spec.catalog), autocomplete: 'off' });
  else el = h('input', { name, autocomplete: 'off' });
  if (label) el.setAttribute('aria-label', label);
  if (spec.class) el.classList.add(spec.class);
  specOf.set(el, spec);
  return el;
}

/** The JSON value of a control: null when empty; catalog references as an id or `{name}` (created by the API). */
function readControl(el, names) {
  const spec = specOf.get(el);
  if (spec.type === 'check') return el.checked;
  const v = el.value.trim();
  if (v === '') return null;
  if (spec.type === 'number' || spec.type === 'integer') return numberFrom(v);
  if (spec.type === 'datetime') return fromUtcInput(v);
  if (spec.type === 'bool') return v === 'true';
  if (spec.type === 'catalog') return names.resolve(spec.catalog, v);
  return v;
}

/** Shows a record's value in a control. */
function writeControl(el, value, names) {
  const spec = specOf.get(el);
  if (spec.type === 'check') el.checked = value === true;
  else if (spec.type === 'datetime') el.value = utcInput(value);
  else if (spec.type === 'bool') el.value = value === true ? 'true' : value === false ? 'false' : '';
  else if (spec.type === 'catalog') el.value = value && typeof value === 'object' ? value.name || value.xref || value.id || '' : names.label(spec.catalog, value);
  else el.value = value === null || value === undefined ? '' : String(value);
}

/** Text pasted from a spreadsheet cell into a control. */
function pasteInto(el, text) {
  const spec = specOf.get(el);
  const v = text.trim();
  if (spec.type === 'check') {
    el.checked = /^(1|x|y|yes|true|✓|off[ -]?spec)$/i.test(v);
  } else if (el.tagName === 'SELECT') {
    const wanted = (OPERATOR_ALIASES[v] ?? v).toLowerCase();
    const option = [...el.options].find((o) => o.value.toLowerCase() === wanted || o.textContent.trim().toLowerCase() === wanted);
    el.value = option ? option.value : '';
  } else if (spec.type === 'datetime') {
    el.value = fromUtcInput(v).replace(/:00Z$/, '').replace(/Z$/, '');
  } else {
    el.value = v;
  }
}

// Catalog suggestions: one <datalist> per catalog, outside the view.
const datalistId = (catalog) => `catalog-${catalog}`;

function fillDatalist(id, options) {
  let list = document.getElementById(id);
  if (!list) {
    list = h('datalist', { id });
    document.body.append(list);
  }
  list.replaceChildren(...options.map(([value, label]) => h('option', { value, label: label || null })));
}

function fillCatalogLists(names, catalogs) {
  for (const catalog of catalogs) {
    const records = [...(names.records.get(catalog)?.values() ?? [])].filter(Boolean);
    fillDatalist(datalistId(catalog), records.map((r) => [r.name || r.xref, r.name && r.xref ? r.xref : '']));
  }
}

const CATALOG_TITLES = {
  products: 'products',
  locations: 'locations',
  transports: 'transports',
  uom: 'units',
  tests: 'tests',
  testMethods: 'test methods',
  eventTypes: 'event types',
  vcfTable: 'VCF tables',
};

/**
 * Beside each catalog control under `root`, what its text will be sent as:
 * the record it names (by name or xref), or a new one the API adds. Follows
 * typing; `refresh()` after values are set otherwise (a record, a draft).
 */
function catalogNotes(root, names) {
  const update = (el) => {
    const spec = specOf.get(el);
    if (spec?.type !== 'catalog') return;
    if (!el.id) el.id = `field-${++fieldIds}`;
    const id = `${el.id}-catalog`;
    let note = document.getElementById(id);
    const text = el.value.trim();
    const ref = text ? names.resolve(spec.catalog, text) : null;
    const record = typeof ref === 'string' ? names.records.get(spec.catalog)?.get(ref) : null;
    // In a grid's narrow cells, only what the text does not say already.
    const said = record && el.closest('.grid') && record.name?.toLowerCase() === text.toLowerCase();
    if (!text || said) {
      note?.remove();
      return;
    }
    if (!note) {
      note = h('span', { class: 'catalog-note', id });
      el.after(note);
      el.setAttribute('aria-describedby', [el.getAttribute('aria-describedby'), id].filter(Boolean).join(' '));
    }
    note.classList.toggle('catalog-new', !record);
    note.textContent = record
      ? `Existing: ${record.name || record.xref}${record.name && record.xref ? ` (${record.xref})` : ''}`
      : `New: adds “${text}” to the ${CATALOG_TITLES[spec.catalog] ?? spec.catalog}`;
  };
  const refresh = () => root.querySelectorAll('[list]').forEach(update);
  root.addEventListener('input', (event) => update(event.target));
  return { refresh };
}

/** The catalogs the controls of `specs` pick from. */
const catalogsOf = (specs) => [...new Set(specs.filter((s) => s.type === 'catalog').map((s) => s.catalog))];

/**
 * A grid of rows of controls (`spec.columns`): cells named
 * `PATH[i].COLUMN` (`PATH[i]` for a column whose path is ''), so an API error
 * on `measurements[2].value` lands on its cell. Enter in a cell adds a row
 * (or moves to the next one), Tab moves on; tab-separated text pasted into a
 * cell fills the grid from that cell, adding rows. `spec.remove(tr)` may
 * refuse the removal of a row (a saved record: confirmed, deleted first).
 */
function grid(spec, { onChange = () => {}, status = false } = {}) {
  const tbody = h('tbody');
  const label = (column, n) => `${column.label}, row ${n}`;
  const rows = () => [...tbody.rows];
  const controlsOf = (tr) => [...tr.querySelectorAll('[name]')];
  const cellName = (i, column) => (column.path === '' ? `${spec.path}[${i}]` : `${spec.path}[${i}].${column.path}`);

  const renumber = () => {
    rows().forEach((tr, i) => {
      tr.querySelector('.grid-n').textContent = String(i + 1);
      tr.querySelectorAll('[name]').forEach((el, c) => {
        el.name = cellName(i, spec.columns[c]);
        el.setAttribute('aria-label', label(spec.columns[c], i + 1));
      });
      tr.querySelector('.grid-remove').setAttribute('aria-label', `Remove row ${i + 1}`);
    });
  };

  function addRow(after = null) {
    const n = rows().length;
    const tr = h(
      'tr',
      {},
      h('td', { class: 'grid-n muted' }, String(n + 1)),
      spec.columns.map((column) => h('td', { class: column.type === 'check' ? 'grid-check' : '' }, control(column, cellName(n, column), label(column, n + 1)))),
      status ? h('td', { class: 'row-status', 'aria-live': 'polite' }) : null,
      h('td', { class: 'grid-actions' }, h('button', { type: 'button', class: 'button button-small button-ghost grid-remove', 'aria-label': `Remove row ${n + 1}`, title: 'Remove this row' }, '×')),
    );
    if (after) after.after(tr);
    else tbody.append(tr);
    renumber();
    return tr;
  }

  const focusRow = (tr) => controlsOf(tr)[0]?.focus();

  tbody.addEventListener('click', async (event) => {
    const button = event.target.closest('.grid-remove');
    if (!button) return;
    const tr = button.closest('tr');
    if (spec.remove && !(await spec.remove(tr))) return;
    const next = tr.nextElementSibling ?? tr.previousElementSibling;
    tr.remove();
    renumber();
    onChange();
    if (next) focusRow(next);
    else addButton.focus();
  });

  tbody.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' || event.isComposing || event.shiftKey || event.ctrlKey || event.altKey || event.metaKey) return;
    const el = event.target;
    if (!el.name || el.tagName === 'TEXTAREA' || el.tagName === 'BUTTON') return;
    event.preventDefault();
    const tr = el.closest('tr');
    const next = tr.nextElementSibling ?? addRow(tr);
    onChange();
    focusRow(next);
  });

  tbody.addEventListener('paste', (event) => {
    const el = event.target;
    if (!el.name) return;
    const text = event.clipboardData?.getData('text/plain') ?? '';
    if (!/[\t\n\r]/.test(text.replace(/[\r\n]+$/, ''))) return;
    event.preventDefault();
    const lines = text.replace(/\r\n?/g, '\n').replace(/\n+$/, '').split('\n');
    let tr = el.closest('tr');
    const from = controlsOf(tr).indexOf(el);
    lines.forEach((line, j) => {
      if (j > 0) tr = tr.nextElementSibling ?? addRow(tr);
      const cells = controlsOf(tr);
      line.split('\t').forEach((value, k) => {
        if (!cells[from + k]) return;
        pasteInto(cells[from + k], value);
        cells[from + k].dispatchEvent(new Event('input', { bubbles: true }));
      });
    });
    onChange();
  });

  const addButton = h('button', { type: 'button', class: 'button button-small' }, spec.addLabel ?? 'Add a row');
  addButton.addEventListener('click', () => {
    const tr = addRow();
    onChange();
    focusRow(tr);
  });

  const el = h(
    'div',
    { class: 'grid-wrap' },
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'table grid', 'aria-label': spec.label },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, '#'), spec.columns.map((c) => h('th', { scope: 'col' }, c.label)), status ? h('th', { scope: 'col' }, 'Saved') : null, h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Remove')))),
        tbody,
      ),
    ),
    h('div', { class: 'grid-tools' }, addButton, h('span', { class: 'field-hint' }, 'Enter adds a row; Tab moves on; paste rows copied from a spreadsheet into a cell to fill the grid from there.')),
  );

  return {
    spec,
    el,
    rows,
    addRow,
    /** As many rows as `count`, with these ids (`[{id, original}]`, for saved records). */
    setRows(list) {
      tbody.replaceChildren();
      for (const item of list) {
        const tr = addRow();
        if (item?.id) tr.dataset.id = item.id;
        if (item?.original) tr.dataset.original = item.original;
      }
    },
    /** A row's value: `{tr, index, id, body, blank}` (column '' rows are the value itself). */
    read(tr, names) {
      const values = controlsOf(tr).map((c) => readControl(c, names));
      const blank = values.every((v) => v === null || v === false);
      let body = {};
      spec.columns.forEach((column, c) => {
        if (column.path === '') body = values[c];
        else setPath(body, column.path, values[c]);
      });
      return { tr, index: rows().indexOf(tr), id: tr.dataset.id ?? null, body, blank };
    },
    write(tr, value, names) {
      controlsOf(tr).forEach((c, i) => writeControl(c, spec.columns[i].path === '' ? value : getPath(value ?? {}, spec.columns[i].path), names));
    },
    status(tr, text, kind = '') {
      const cell = tr.querySelector('.row-status');
      if (!cell) return;
      cell.replaceChildren(...richText(text));
      cell.className = `row-status ${kind}`.trim();
    },
  };
}

// ---------------------------------------------------------------------------
// Errors in place

/** The control a field path names under `root`: `measurements[2].value`, else its nearest named parent. */
function findControl(root, field) {
  let name = String(field ?? '').replace(/^body\./, '');
  while (name) {
    const el = root.querySelector(`[name="${CSS.escape(name)}"]`);
    if (el) return el;
    const cut = Math.max(name.lastIndexOf('.'), name.lastIndexOf('['));
    if (cut <= 0) return null;
    name = name.slice(0, cut);
  }
  return null;
}

/** Marks a control as in error, with the text beside it (linked by aria-describedby). */
function markInvalid(el, text) {
  if (!el.id) el.id = `field-${++fieldIds}`;
  const id = `${el.id}-error`;
  let note = document.getElementById(id);
  if (!note) {
    note = h('span', { class: 'field-error', id });
    (el.closest('.field') ?? el.parentElement).append(note);
  }
  note.replaceChildren(...richText(text));
  el.setAttribute('aria-invalid', 'true');
  const described = new Set((el.getAttribute('aria-describedby') ?? '').split(' ').filter(Boolean));
  described.add(id);
  el.setAttribute('aria-describedby', [...described].join(' '));
}

function clearInvalid(root) {
  for (const note of root.querySelectorAll('.field-error')) note.remove();
  for (const el of root.querySelectorAll('[aria-invalid="true"]')) {
    el.removeAttribute('aria-invalid');
    const described = (el.getAttribute('aria-describedby') ?? '').split(' ').filter((id) => id && !id.endsWith('-error'));
    if (described.length) el.setAttribute('aria-describedby', described.join(' '));
    else el.removeAttribute('aria-describedby');
  }
}

/** The API's refusal on the field it names (looked up with `toName`), or on the form as a whole. Answers the control. */
function errorInPlace(root, err, toName = (field) => field) {
  const el = err?.field ? findControl(root, toName(err.field)) : null;
  if (el) markInvalid(el, err.message);
  return el;
}

const isNetwork = (err) => err instanceof ApiError && err.status === 0;

/** What to tell the user when a save failed on the network: nothing is lost, save again. */
function networkNote(err) {
  return message('warning', 'Not saved: the server could not be reached', `Your entries are kept here and in this browser. Check the connection, then press Save again. (${err.message})`);
}

// ---------------------------------------------------------------------------
// Drafts: an unsaved form, kept in localStorage per record until it is saved
// or discarded, offered again after a reload or a lost connection.

const DRAFT_PREFIX = 'quayside.draft';

const drafts = {
  key: (...parts) => [DRAFT_PREFIX, api.session()?.username ?? '', ...parts].join('|'),
  load(key) {
    try {
      const value = JSON.parse(localStorage.getItem(key) ?? 'null');
      return value && typeof value === 'object' && value.values ? value : null;
    } catch {
      return null;
    }
  },
  save(key, draft) {
    try {
      localStorage.setItem(key, JSON.stringify(draft));
    } catch (err) {
      console.error(err);
    }
  },
  clear(key) {
    localStorage.removeItem(key);
  },
  /** The keys of drafts kept under a prefix of `key(...)`. */
  under(prefix) {
    const keys = [];
    for (let i = 0; i < localStorage.length; i += 1) {
      const key = localStorage.key(i);
      if (key?.startsWith(prefix)) keys.push(key);
    }
    return keys.sort();
  },
};

/** Every named control's value under `root`, and each grid's rows (with the ids of saved records). */
function snapshot(root, grids, label) {
  const values = {};
  for (const el of root.querySelectorAll('[name]')) values[el.name] = el.type === 'checkbox' ? el.checked : el.value;
  const rows = {};
  for (const g of grids) rows[g.spec.path] = g.rows().map((tr) => ({ id: tr.dataset.id ?? null, original: tr.dataset.original ?? null }));
  return { label, at: new Date().toISOString(), values, rows };
}

function restoreSnapshot(root, grids, draft) {
  for (const g of grids) if (draft.rows?.[g.spec.path]) g.setRows(draft.rows[g.spec.path]);
  for (const [name, value] of Object.entries(draft.values ?? {})) {
    const el = root.querySelector(`[name="${CSS.escape(name)}"]`);
    if (!el) continue;
    if (el.type === 'checkbox') el.checked = value === true;
    else el.value = value;
  }
}

/** The offer to restore a kept draft: `restore()` and `discard()` are called on the user's choice. */
function draftOffer(draft, { restore, discard }) {
  const restoreButton = h('button', { type: 'button', class: 'button button-small button-primary' }, 'Restore draft');
  const discardButton = h('button', { type: 'button', class: 'button button-small button-ghost' }, 'Discard draft');
  const el = h(
    'div',
    { class: 'draft-offer no-print', role: 'status' },
    h('span', {}, `An unsaved draft${draft.label ? ` of ${draft.label}` : ''} from ${fmt.dateTime(draft.at)} is kept in this browser.`),
    restoreButton,
    discardButton,
  );
  restoreButton.addEventListener('click', () => {
    el.remove();
    restore();
  });
  discardButton.addEventListener('click', () => {
    el.remove();
    discard();
  });
  return el;
}

/**
 * Keeps the form's draft as the user types (`input`, `change` and grid
 * changes call `keep()`), and offers a kept one when the form opens.
 */
function draftKeeper(key, form, grids, label) {
  const keep = () => drafts.save(key, snapshot(form, grids, label));
  form.addEventListener('input', keep);
  form.addEventListener('change', keep);
  return {
    keep,
    clear: () => drafts.clear(key),
    /** The offer of a kept draft (null when there is none); `restored()` runs after a restore. */
    offer(restored = () => {}) {
      const draft = drafts.load(key);
      if (!draft) return null;
      return draftOffer(draft, {
        restore: () => {
          restoreSnapshot(form, grids, draft);
          restored();
          form.querySelector('[name]:not([readonly])')?.focus();
        },
        discard: () => drafts.clear(key),
      });
    },
  };
}

/** Asks before a delete, naming what goes. */
function confirmDelete(what) {
  return window.confirm(`Delete ${what}? This cannot be undone.`);
}

// ---------------------------------------------------------------------------
// The records of a job, as the console edits them: one table. A kind is
// edited either as a form per document (`form`: its fields and, when it has
// one, a grid of measurements) or as rows of documents (`rows`: one row per
// document, under shared header fields), saved one request per row.

const MEASUREMENTS = {
  path: 'measurements',
  label: 'Measurements',
  addLabel: 'Add a measurement',
  columns: [
    { path: 'code', label: 'Code', type: 'text', class: 'mono' },
    { path: 'name', label: 'Name', type: 'text' },
    { path: 'value', label: 'Value', type: 'number' },
    { path: 'uom', label: 'Unit', type: 'catalog', catalog: 'uom' },
  ],
};

const KINDS = {
  loadPortInformation: {
    path: 'load-port-information',
    title: 'Load port information',
    one: 'load port information',
    editor: 'form',
    fields: [
      { path: 'billOfLadingDate', label: 'Bill of lading date (UTC)', type: 'datetime' },
      { path: 'portOfLoading', label: 'Port of loading', type: 'catalog', catalog: 'locations', hint: 'A location of the workspace, by name or xref; a new name adds it.' },
    ],
    grid: MEASUREMENTS,
    describe: (body, names) => `the load port information${body.portOfLoading ? ` of ${names.label('locations', body.portOfLoading)}` : ''}`,
    /** The editors the section offers: [key, button label]. */
    editors: (docs) => [...docs.map((d, i) => [`doc:${d.id}`, docs.length > 1 ? `Edit #${i + 1}` : 'Edit']), ['doc:new', docs.length ? 'Add more' : 'Add load port information']],
  },
  quantityResult: {
    path: 'quantity',
    title: 'Quantity',
    one: 'quantity result',
    editor: 'form',
    sides: ['source', 'destination'],
    fields: [
      { path: 'date', label: 'Date (UTC)', type: 'datetime' },
      { path: 'activeShoreTank', label: 'Active shore tank', type: 'bool' },
      { path: 'waterPerc', label: 'Water %', type: 'number' },
      { path: 'waterMethod', label: 'Water method', type: 'text' },
      { path: 'sedimentPerc', label: 'Sediment %', type: 'number' },
      { path: 'sedimentMethod', label: 'Sediment method', type: 'text' },
      { path: 'sedimentWaterPerc', label: 'Sediment and water %', type: 'number' },
      { path: 'density15c', label: 'Density at 15 °C', type: 'number' },
      { path: 'densityMethod', label: 'Density method', type: 'text' },
      { path: 'meanTemp.value', label: 'Mean temperature', type: 'number' },
      { path: 'meanTemp.uom', label: 'Temperature unit', type: 'catalog', catalog: 'uom' },
      { path: 'vcfTable', label: 'VCF table', type: 'catalog', catalog: 'vcfTable' },
      { path: 'api', label: 'API gravity', type: 'number' },
    ],
    grid: MEASUREMENTS,
    describe: (body) => `the ${body.direction} quantity result`,
    editors: () => [['sides', 'Record quantity']],
  },
  qualityResult: {
    path: 'quality',
    title: 'Quality',
    one: 'quality result',
    editor: 'rows',
    label: 'Certificate rows',
    addLabel: 'Add a test',
    header: [
      { path: 'setNumber', label: 'Set number', type: 'integer' },
      { path: 'status', label: 'Status', type: 'select', options: [['confirmed', 'confirmed'], ['preliminary', 'preliminary']], blank: false },
      { path: 'date', label: 'Test date (UTC)', type: 'datetime' },
      { path: 'coaId', label: 'Certificate of analysis id', type: 'text' },
    ],
    columns: [
      { path: 'test', label: 'Test', type: 'catalog', catalog: 'tests' },
      { path: 'method', label: 'Method', type: 'catalog', catalog: 'testMethods' },
      { path: 'uom', label: 'Unit', type: 'catalog', catalog: 'uom' },
      { path: 'resultOperator', label: 'Operator', type: 'select', options: OPERATOR_OPTIONS, blank: false },
      { path: 'result', label: 'Result', type: 'text' },
      { path: 'sample.location', label: 'Sample', type: 'text' },
      { path: 'isOffSpec', label: 'Off spec', type: 'check' },
    ],
    /** Fields every row takes from the header: the row's place is its test number. */
    rowBody: (index, header) => ({ ...header, testNumber: index + 1 }),
    /** The documents of an editor (`set:N`, `new`), in row order, and the header they share. */
    rowsOf(key, docs) {
      if (key === 'new') {
        const next = Math.max(0, ...docs.map((d) => d.body.setNumber ?? 0)) + 1;
        return { docs: [], header: { setNumber: next, status: 'confirmed' } };
      }
      const set = Number(key.split(':')[1]);
      const mine = docs.filter((d) => d.body.setNumber === set).sort((a, b) => (a.body.testNumber ?? 0) - (b.body.testNumber ?? 0));
      const first = mine[0]?.body ?? {};
      return { docs: mine, header: { setNumber: set, status: first.status, date: first.date, coaId: first.coaId } };
    },
    describe: (body, names) => {
      const test = body.test && typeof body.test === 'object' ? body.test.name || body.test.xref : names.label('tests', body.test);
      return `the quality result ${body.setNumber ?? ''}.${body.testNumber ?? ''} (${test || 'no test'}: ${body.result ?? 'no result'})`;
    },
    editors: (docs) => [['rows:new', 'New certificate'], ...[...new Set(docs.map((d) => d.body.setNumber))].sort((a, b) => a - b).map((n) => [`rows:set:${n}`, `Edit set ${n}`])],
  },
  timelog: {
    path: 'timelog',
    title: 'Time log',
    one: 'time log entry',
    editor: 'rows',
    label: 'Time log entries',
    addLabel: 'Add an event or delay',
    header: [],
    columns: [
      { path: 'type', label: 'Event', type: 'catalog', catalog: 'eventTypes' },
      { path: 'category', label: 'Category', type: 'select', options: [['event', 'event'], ['delay', 'delay']], blank: false },
      { path: 'start', label: 'Start (UTC)', type: 'datetime' },
      { path: 'end', label: 'End (UTC)', type: 'datetime' },
      { path: 'notes', label: 'Notes', type: 'text' },
    ],
    rowBody: () => ({}),
    rowsOf: (key, docs) => ({ docs: [...docs].sort((a, b) => Date.parse(a.body.start) - Date.parse(b.body.start)), header: {} }),
    describe: (body, names) => `the ${body.category ?? 'time log'} ${names.label('eventTypes', body.type) || ''} at ${fmt.dateTime(body.start)}`.replace(/\s+/g, ' '),
    editors: () => [['rows:all', 'Edit time log']],
  },
};

/** The catalogs a kind's editor picks from. */
const kindCatalogs = (kind) => catalogsOf([...(KINDS[kind].fields ?? []), ...(KINDS[kind].header ?? []), ...(KINDS[kind].grid?.columns ?? []), ...(KINDS[kind].columns ?? [])]);

/** Buttons of a form: Save, Cancel and, for a stored record, Delete. */
function editorActions({ saveLabel = 'Save', onCancel, onDelete, deleteLabel = 'Delete' }) {
  const save = h('button', { type: 'submit', class: 'button button-primary' }, saveLabel);
  const cancel = h('button', { type: 'button', class: 'button button-ghost', on: { click: onCancel } }, 'Cancel');
  const remove = onDelete ? h('button', { type: 'button', class: 'button button-danger editor-delete', on: { click: onDelete } }, deleteLabel) : null;
  return { save, el: h('div', { class: 'form-actions' }, save, cancel, remove ? h('span', { class: 'spacer' }) : null, remove) };
}

/**
 * One document of a `form` kind: its fields and its grid, created with POST
 * (with `fixed` fields, e.g. the direction) or changed with PATCH (every field
 * sent; an emptied one is cleared), deleted after a confirmation naming it.
 * `ctx`: {base, names, draftKey, onSaved, onClose, restore}.
 */
function documentForm(kindName, doc, ctx, { fixed = {}, title }) {
  const kind = KINDS[kindName];
  const creating = !doc;
  const controls = kind.fields.map((spec) => [spec, control(spec)]);
  const grids = [];
  const form = h('form', { class: 'editor', novalidate: true, 'aria-label': title });
  const keeper = draftKeeper(ctx.draftKey, form, grids, title.toLowerCase());
  const g = kind.grid ? grid(kind.grid, { onChange: () => keeper.keep() }) : null;
  if (g) grids.push(g);
  const status = h('div', { class: 'editor-status' });

  for (const [spec, el] of controls) writeControl(el, doc ? getPath(doc.body, spec.path) : null, ctx.names);
  if (g) {
    const list = doc?.body[kind.grid.path] ?? [];
    g.setRows(list.length ? list.map(() => null) : [null]);
    g.rows().forEach((tr, i) => g.write(tr, list[i] ?? {}, ctx.names));
  }

  const read = () => {
    const body = {};
    for (const [spec, el] of controls) setPath(body, spec.path, readControl(el, ctx.names));
    if (g) body[kind.grid.path] = g.rows().map((tr) => g.read(tr, ctx.names)).filter((r) => !r.blank).map((r) => pruned(r.body));
    return creating ? pruned({ ...body, ...fixed }) : body;
  };

  const remove = async () => {
    if (!confirmDelete(kind.describe(doc.body, ctx.names))) return;
    status.replaceChildren();
    try {
      await api.request('DELETE', `${ctx.base}/${kind.path}/${encodeURIComponent(doc.id)}`);
      keeper.clear();
      await ctx.onSaved(`Deleted ${kind.describe(doc.body, ctx.names)}.`);
    } catch (err) {
      status.replaceChildren(isNetwork(err) ? networkNote(err) : errorMessage(err, `Could not delete ${kind.one}`));
    }
  };
  const actions = editorActions({
    saveLabel: creating ? `Save ${kind.one}` : 'Save changes',
    onCancel: () => {
      keeper.clear();
      ctx.onClose();
    },
    onDelete: creating ? null : remove,
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearInvalid(form);
    status.replaceChildren();
    actions.save.disabled = true;
    try {
      if (creating) await api.request('POST', `${ctx.base}/${kind.path}`, { json: read() });
      else await api.request('PATCH', `${ctx.base}/${kind.path}/${encodeURIComponent(doc.id)}`, { json: read() });
      keeper.clear();
      await ctx.onSaved(`Saved ${title.toLowerCase()}.`);
    } catch (err) {
      keeper.keep();
      if (isNetwork(err)) {
        status.replaceChildren(networkNote(err));
      } else {
        status.replaceChildren(errorMessage(err, `${title}: not saved`));
        (errorInPlace(form, err) ?? actions.save).focus();
      }
    } finally {
      actions.save.disabled = false;
    }
  });

  append(form, [
    h('h3', {}, title),
    h('div', { class: 'form-grid' }, controls.map(([spec, el]) => field(spec.label, el, spec.hint))),
    g ? h('div', { class: 'field' }, h('span', { class: 'field-label' }, kind.grid.label), g.el) : null,
    status,
    actions.el,
  ]);
  const notes = catalogNotes(form, ctx.names);
  offerDraft(form, ctx, keeper, grids, notes);
  return form;
}

/**
 * The end of every document editor: the draft kept for this record offered
 * back (or, when asked, restored), then the catalog notes brought up to date.
 */
function offerDraft(form, ctx, keeper, grids, notes) {
  const offer = ctx.restore ? null : keeper.offer(notes.refresh);
  if (offer) form.prepend(offer);
  else if (ctx.restore && drafts.load(ctx.draftKey)) restoreSnapshot(form, grids, drafts.load(ctx.draftKey));
  notes.refresh();
}

/**
 * Documents of a `rows` kind as rows of one grid under shared header fields
 * (a quality certificate, the time log). Save sends each new row as a POST
 * and each changed row as a PATCH, one request per row, in order; a row the
 * API refuses shows the error on its row and field, and focus moves to the
 * first of them. A saved row can be removed (DELETE, after a confirmation).
 * When a route for a whole certificate exists, `saveRows` is the one place to
 * send them together.
 */
function documentRows(kindName, key, docs, ctx, { title }) {
  const kind = KINDS[kindName];
  const { docs: mine, header: initial } = kind.rowsOf(key, docs);
  const headerControls = kind.header.map((spec) => [spec, control(spec)]);
  const grids = [];
  const form = h('form', { class: 'editor', novalidate: true, 'aria-label': title });
  const keeper = draftKeeper(ctx.draftKey, form, grids, title.toLowerCase());
  const status = h('div', { class: 'editor-status' });
  const headerValues = () => Object.fromEntries(headerControls.map(([spec, el]) => [spec.path, readControl(el, ctx.names)]));
  const describe = (tr) => kind.describe({ ...headerValues(), ...g.read(tr, ctx.names).body, testNumber: g.rows().indexOf(tr) + 1 }, ctx.names);
  // What a row holds as typed (with the header and its place): a saved row whose
  // signature is unchanged is not sent again. Typed text, not resolved
  // references, since the names known may grow while the form is open.
  const typed = (el) => (el.type === 'checkbox' ? el.checked : el.value.trim());
  const signature = (row) =>
    JSON.stringify([row.index, headerControls.map(([, el]) => typed(el)), [...row.tr.querySelectorAll('[name]')].map(typed)]);

  const g = grid(
    {
      path: 'rows',
      label: kind.label,
      addLabel: kind.addLabel,
      columns: kind.columns,
      remove: async (tr) => {
        if (!tr.dataset.id) return true;
        if (!confirmDelete(describe(tr))) return false;
        try {
          await api.request('DELETE', `${ctx.base}/${kind.path}/${encodeURIComponent(tr.dataset.id)}`);
          await ctx.onChanged();
          return true;
        } catch (err) {
          g.status(tr, err.message, 'row-error');
          status.replaceChildren(isNetwork(err) ? networkNote(err) : errorMessage(err, `Could not delete ${kind.one}`));
          return false;
        }
      },
    },
    { status: true, onChange: () => keeper.keep() },
  );
  grids.push(g);

  for (const [spec, el] of headerControls) writeControl(el, initial[spec.path], ctx.names);
  g.setRows(mine.length ? mine.map((d) => ({ id: d.id })) : [null]);
  g.rows().forEach((tr, i) => {
    if (!mine[i]) return;
    g.write(tr, mine[i].body, ctx.names);
    tr.dataset.original = signature(g.read(tr, ctx.names));
  });

  async function saveRows(rows) {
    const header = headerValues();
    const failures = [];
    let saved = 0;
    for (const row of rows) {
      const body = { ...kind.rowBody(row.index, header), ...row.body };
      const sig = signature(row);
      if (row.id && row.tr.dataset.original === sig) continue;
      g.status(row.tr, 'Saving…');
      try {
        if (row.id) {
          await api.request('PATCH', `${ctx.base}/${kind.path}/${encodeURIComponent(row.id)}`, { json: body });
        } else {
          const created = await api.request('POST', `${ctx.base}/${kind.path}`, { json: pruned(body) });
          row.tr.dataset.id = created.id;
        }
        row.tr.dataset.original = sig;
        saved += 1;
        g.status(row.tr, 'Saved', 'row-ok');
      } catch (err) {
        g.status(row.tr, isNetwork(err) ? 'Not saved' : err.message, 'row-error');
        failures.push({ row, err });
        if (isNetwork(err)) break;
      }
    }
    return { saved, failures };
  }

  const actions = editorActions({
    saveLabel: 'Save',
    onCancel: () => {
      keeper.clear();
      ctx.onClose();
    },
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearInvalid(form);
    status.replaceChildren();
    actions.save.disabled = true;
    try {
      const rows = g.rows().map((tr) => g.read(tr, ctx.names)).filter((r) => !r.blank || r.id);
      const { saved, failures } = await saveRows(rows);
      if (!failures.length) {
        keeper.clear();
        await ctx.onSaved(`Saved ${title.toLowerCase()}: ${saved} row${saved === 1 ? '' : 's'} written.`);
        return;
      }
      keeper.keep();
      await ctx.onChanged();
      // The rows saved may have added catalog records: what the others name is known again.
      await ctx.names.load(Object.fromEntries(kindCatalogs(kindName).map((c) => [c, []]))).catch((err) => console.error(err));
      fillCatalogLists(ctx.names, kindCatalogs(kindName));
      notes.refresh();
      const network = failures.find((f) => isNetwork(f.err));
      let first = null;
      for (const { row, err } of failures) {
        if (isNetwork(err)) continue;
        const el = errorInPlace(row.tr, err, (f) => `rows[${row.index}].${f.replace(/^body\./, '')}`) ?? errorInPlace(form, err);
        first ??= el ?? row.tr.querySelector('[name]');
      }
      const refused = failures.filter((f) => !isNetwork(f.err));
      status.replaceChildren(
        ...(refused.length
          ? [
              message(
                'error',
                `${saved} row${saved === 1 ? '' : 's'} saved; ${refused.length} refused`,
                h('ul', { class: 'row-errors' }, refused.map(({ row, err }) => h('li', {}, `Row ${row.index + 1}: `, richText(err.message), err.field ? h('span', { class: 'muted' }, ` (${err.field})`) : null))),
              ),
            ]
          : []),
        ...(network ? [networkNote(network.err)] : []),
      );
      (first ?? actions.save).focus();
    } finally {
      actions.save.disabled = false;
    }
  });

  append(form, [
    h('h3', {}, title),
    headerControls.length ? h('div', { class: 'form-grid form-grid-4' }, headerControls.map(([spec, el]) => field(spec.label, el, spec.hint))) : null,
    g.el,
    status,
    actions.el,
  ]);
  const notes = catalogNotes(form, ctx.names);
  offerDraft(form, ctx, keeper, grids, notes);
  return form;
}

// ---------------------------------------------------------------------------
// Pieces of the job page used by the editors and the printed report

/** A card of the job page: its heading and editor buttons, drafts on offer, what is recorded, the open editor. */
function editableSection(title) {
  const id = `section-${title.toLowerCase().replace(/[^a-z]+/g, '-')}`;
  const tools = h('div', { class: 'section-tools no-print' });
  const offers = h('div', { class: 'section-offers no-print' });
  const display = h('div', { class: 'section-display' });
  const editor = h('div', { class: 'section-editor no-print' });
  const card = h('section', { class: 'card', 'aria-labelledby': id }, h('div', { class: 'section-head' }, h('h2', { id }, title), tools), offers, display, editor);
  return { card, tools, offers, display, editor };
}

/** The status changes the API allows, from each status: [next, the action's label]. */
const JOB_TRANSITIONS = {
  pending: [['active', 'Start (active)'], ['cancelled', 'Cancel job']],
  active: [['complete', 'Complete'], ['cancelled', 'Cancel job']],
  complete: [['active', 'Reopen']],
  cancelled: [['pending', 'Reinstate']],
};

/** The time log as a table, for the printed report (the screen shows the timeline). */
function timelogTable(docs, names) {
  if (!docs.length) return null;
  const sorted = [...docs].sort((a, b) => Date.parse(a.body.start) - Date.parse(b.body.start));
  return h(
    'div',
    { class: 'print-only' },
    table(
      ['Event', 'Category', 'Start', 'End', 'Duration', 'Notes'],
      sorted.map(({ id, body }) =>
        h(
          'tr',
          { data: { id } },
          h('td', {}, names.name('eventTypes', body.type) || dash),
          h('td', {}, body.category ?? dash),
          h('td', { class: 'nowrap' }, fmt.dateTime(body.start) || dash),
          h('td', { class: 'nowrap' }, fmt.dateTime(body.end) || dash),
          h('td', { class: 'nowrap' }, body.end ? fmt.duration(Date.parse(body.end) - Date.parse(body.start)) : dash),
          h('td', {}, body.notes ?? ''),
        ),
      ),
      { label: 'Time log table' },
    ),
  );
}

// ---------------------------------------------------------------------------
// A job's form: create and edit every field

function jobFields(partyOptions) {
  return [
    { path: 'xref', label: 'Job reference (xref)', type: 'text', hint: "The job's id in the client's systems." },
    { path: 'refNumber', label: 'Reference number', type: 'text' },
    { path: 'tripNumber', label: 'Trip number', type: 'text' },
    { path: 'activity', label: 'Activity', type: 'select', options: ['load', 'discharge', 'sts', 'transfer', 'sample'].map((a) => [a, a]) },
    { path: 'eta', label: 'ETA (UTC)', type: 'datetime' },
    { path: 'etc', label: 'ETC (UTC)', type: 'datetime' },
    { path: 'location', label: 'Location', type: 'catalog', catalog: 'locations', hint: 'Type a name or xref of the workspace’s locations; a new name adds it.' },
    { path: 'cargo.product', label: 'Product', type: 'catalog', catalog: 'products', hint: 'A product of the workspace, or a new name.' },
    { path: 'cargo.quantity', label: 'Cargo quantity', type: 'number' },
    { path: 'cargo.uom', label: 'Cargo unit', type: 'catalog', catalog: 'uom' },
    { path: 'client', label: 'Client', type: 'select', options: partyOptions, blank: 'The workspace’s client', omitEmpty: true },
    { path: 'vendor', label: 'Vendor', type: 'select', options: partyOptions, blank: 'The workspace’s vendor', omitEmpty: true },
    { path: 'notes', label: 'Notes and instructions', type: 'textarea', wide: true },
  ];
}

const JOB_REQUESTED = ['quantity', 'quality', 'timelog'].map((what) => ({ path: `requested.${what}`, label: what === 'timelog' ? 'Time log' : what[0].toUpperCase() + what.slice(1), type: 'check' }));

const JOB_TRANSPORTS = {
  path: 'transports',
  label: 'Transports',
  addLabel: 'Add a transport',
  columns: [{ path: '', label: 'Transport', type: 'catalog', catalog: 'transports' }],
};

async function jobFormView(view, workspaceId, jobId, alive) {
  const creating = !jobId;
  const ws = `/workspaces/${encodeURIComponent(workspaceId)}`;
  const wsHash = `#/workspaces/${encodeURIComponent(workspaceId)}`;
  const [workspace, job] = await Promise.all([api.get(ws), creating ? null : api.get(`${ws}/jobs/${encodeURIComponent(jobId)}`)]);
  const names = new CatalogNames(workspaceId);
  const catalogs = catalogsOf([...jobFields([]), ...JOB_TRANSPORTS.columns]);
  const p = workspace.body.parties ?? {};
  const [org] = await Promise.all([
    organizationLabels([p.client?.id, p.vendor?.id, job?.client, job?.vendor]),
    names.load({ ...Object.fromEntries(catalogs.map((c) => [c, []])), locations: [job?.location], products: [job?.cargo?.product], uom: [job?.cargo?.uom], transports: job?.transports ?? [] }),
  ]);
  if (!alive()) return;
  fillCatalogLists(names, catalogs);
  const partyIds = [...new Set([p.client?.id, p.vendor?.id, job?.client, job?.vendor].filter(Boolean))];
  const partyOptions = partyIds.map((id) => [id, `${org(id)}${id === p.client?.id ? ' (client)' : id === p.vendor?.id ? ' (vendor)' : ''}`]);
  const title = creating ? 'New job' : `Edit ${job.xref || job.refNumber || 'job'}`;

  const controls = [...jobFields(partyOptions), ...JOB_REQUESTED].map((spec) => [spec, control(spec)]);
  const grids = [];
  const form = h('form', { class: 'card form', novalidate: true, 'aria-label': title });
  const keeper = draftKeeper(drafts.key('jobform', workspaceId, jobId ?? 'new'), form, grids, title.toLowerCase());
  const transports = grid(JOB_TRANSPORTS, { onChange: () => keeper.keep() });
  grids.push(transports);
  for (const [spec, el] of controls) writeControl(el, job ? getPath(job, spec.path) : null, names);
  const list = job?.transports ?? [];
  transports.setRows(list.length ? list.map(() => null) : [null]);
  transports.rows().forEach((tr, i) => transports.write(tr, list[i] ?? null, names));

  const read = () => {
    const body = {};
    for (const [spec, el] of controls) {
      const value = readControl(el, names);
      if (value === null && spec.omitEmpty) continue;
      setPath(body, spec.path, value);
    }
    body.transports = transports.rows().map((tr) => transports.read(tr, names)).filter((r) => !r.blank).map((r) => r.body);
    return creating ? pruned(body) : body;
  };
  const status = h('div', { class: 'editor-status' });
  const actions = editorActions({
    saveLabel: creating ? 'Create job' : 'Save changes',
    onCancel: () => {
      keeper.clear();
      go(creating ? wsHash : `${wsHash}/jobs/${encodeURIComponent(jobId)}`);
    },
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearMessages();
    clearInvalid(form);
    status.replaceChildren();
    actions.save.disabled = true;
    try {
      const answer = creating
        ? await api.request('POST', `${ws}/jobs`, { json: read() })
        : await api.request('PATCH', `${ws}/jobs/${encodeURIComponent(jobId)}`, { json: read() });
      keeper.clear();
      const id = creating ? answer.id : jobId;
      const xref = creating ? answer.body?.xref : answer.xref;
      setFlash(`${xref ? `Job ${xref}` : 'The job'} was ${creating ? 'created' : 'saved'}.`);
      go(`${wsHash}/jobs/${encodeURIComponent(id)}`);
    } catch (err) {
      keeper.keep();
      if (isNetwork(err)) status.replaceChildren(networkNote(err));
      else {
        showError(err);
        (errorInPlace(form, err) ?? actions.save).focus();
      }
    } finally {
      actions.save.disabled = false;
    }
  });

  const fieldOf = ([spec, el]) => {
    const f = field(spec.label, el, spec.hint);
    if (spec.wide) f.classList.add('field-wide');
    return f;
  };
  append(form, [
    h('div', { class: 'form-grid' }, controls.filter(([spec]) => spec.type !== 'check').map(fieldOf)),
    h('fieldset', { class: 'checks' }, h('legend', {}, 'Results requested'), controls.filter(([spec]) => spec.type === 'check').map(([spec, el]) => h('label', { class: 'check' }, el, ` ${spec.label}`))),
    h('div', { class: 'field' }, h('span', { class: 'field-label' }, 'Transports (vessels)'), transports.el),
    status,
    actions.el,
  ]);
  const notes = catalogNotes(form, names);
  const offer = keeper.offer(notes.refresh);
  if (offer) form.prepend(offer);
  notes.refresh();
  view.replaceChildren(
    pageHeader(title, {
      crumbs: [['Workspaces', '#/workspaces'], [workspace.body.description || shortId(workspaceId), wsHash], creating ? ['New job'] : [job.xref || shortId(jobId), `${wsHash}/jobs/${encodeURIComponent(jobId)}`], creating ? null : ['Edit']].filter(Boolean),
    }),
    form,
  );
  form.querySelector('[name]').focus();
}

// ---------------------------------------------------------------------------
// A workspace's form: create (your organization and the other party, found in
// the registry), or edit the description

const WORKSPACE_ROLES = [['client', 'the client (shipper or trader)'], ['vendor', 'the vendor (inspection company)']];

async function workspaceFormView(view, workspaceId, alive) {
  const creating = !workspaceId;
  const path = creating ? '/v2/workspaces' : `/v2/workspaces/${encodeURIComponent(workspaceId)}`;
  const workspace = creating ? null : await api.get(path);
  const p = workspace?.body.parties ?? {};
  const org = await organizationLabels([p.client?.id, p.vendor?.id]);
  if (!alive()) return;
  const title = creating ? 'New workspace' : `Edit ${workspace.body.description || 'workspace'}`;
  const back = creating ? '#/workspaces' : `#/workspaces/${encodeURIComponent(workspaceId)}`;

  const description = h('input', { name: 'description', maxlength: 1000, value: workspace?.body.description ?? '' });
  const role = h('select', { name: 'role' }, WORKSPACE_ROLES.map(([value, text]) => h('option', { value }, text)));
  const mine = h('input', { name: 'mine', type: 'search', list: 'organizations-mine', autocomplete: 'off' });
  const other = h('input', { name: 'other', type: 'search', list: 'organizations-other', autocomplete: 'off' });
  const clientXref = h('input', { name: 'parties.client.xref' });
  const vendorXref = h('input', { name: 'parties.vendor.xref' });

  // The registry, searched as the user types: names seen, by lower-case name.
  const found = new Map();
  const search = async (input, listId) => {
    const list = await api.get('/v2/organizations', { name: input.value.trim(), limit: 20 });
    for (const o of list) found.set(o.body.name.toLowerCase(), o.id);
    fillDatalist(listId, list.map((o) => [o.body.name, o.body.category ?? '']));
  };
  const suggest = (input, listId) => {
    let timer = null;
    input.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => search(input, listId).catch((err) => console.error(err)), 150);
    });
    return search(input, listId);
  };
  const organizationId = async (input) => {
    const name = input.value.trim();
    if (!name) return null;
    if (!found.has(name.toLowerCase())) {
      for (const o of await api.get('/v2/organizations', { name, limit: 100 })) found.set(o.body.name.toLowerCase(), o.id);
    }
    return found.get(name.toLowerCase()) ?? undefined;
  };

  const form = h('form', { class: 'card form', novalidate: true, 'aria-label': title });
  const keeper = draftKeeper(drafts.key('workspaceform', workspaceId ?? 'new'), form, [], title.toLowerCase());
  const status = h('div', { class: 'editor-status' });
  const actions = editorActions({
    saveLabel: creating ? 'Create workspace' : 'Save changes',
    onCancel: () => {
      keeper.clear();
      go(back);
    },
  });
  // The API names parties as client and vendor; the form as yours and the other.
  const toName = (field) => {
    const f = field.replace(/^body\./, '');
    const party = /^parties\.(client|vendor)(\.id)?$/.exec(f)?.[1];
    if (!party) return f;
    return party === role.value ? 'mine' : 'other';
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearMessages();
    clearInvalid(form);
    status.replaceChildren();
    actions.save.disabled = true;
    try {
      if (creating) {
        const [mineId, otherId] = [await organizationId(mine), await organizationId(other)];
        for (const [input, id, what] of [[mine, mineId, 'Your organization'], [other, otherId, 'The other party']]) {
          if (id === null && input === mine) throw new ApiError(0, 'missing_field', `${what} is needed: type part of its name and choose it from the registry.`, 'mine');
          if (id === undefined) throw new ApiError(0, 'unknown_organization', `No organization of the registry is named “${input.value.trim()}”: type part of its name and choose one of the suggestions.`, input.name);
        }
        const [clientId, vendorId] = role.value === 'client' ? [mineId, otherId] : [otherId, mineId];
        const party = (id, xref) => pruned({ id, xref: xref.value.trim() || null });
        const body = pruned({ description: description.value.trim() || null, parties: { client: clientId ? party(clientId, clientXref) : null, vendor: vendorId ? party(vendorId, vendorXref) : null } });
        const created = await api.request('POST', path, { json: { body } });
        keeper.clear();
        setFlash(body.description ? `Workspace ${body.description} was created.` : 'The workspace was created.');
        go(`#/workspaces/${encodeURIComponent(created.id)}`);
      } else {
        await api.request('PATCH', path, { json: { body: { description: description.value.trim() || null } } });
        keeper.clear();
        setFlash('The workspace was saved.');
        go(back);
      }
    } catch (err) {
      keeper.keep();
      if (isNetwork(err) && err.code === 'network') status.replaceChildren(networkNote(err));
      else {
        if (err.status) showError(err);
        else status.replaceChildren(errorMessage(err, 'Choose the organizations first'));
        (errorInPlace(form, err, toName) ?? actions.save).focus();
      }
    } finally {
      actions.save.disabled = false;
    }
  });

  append(form, [
    h(
      'div',
      { class: 'form-grid' },
      h('div', { class: 'field field-wide' }, h('label', { class: 'field-label', for: 'ws-description' }, 'Description'), Object.assign(description, { id: 'ws-description' })),
      creating
        ? [
            field('Your organization is', role),
            field('Your organization', mine, 'Search the registry by name; it must be an organization of your account.'),
            field('The other party', other, 'Search the registry by name; may be left empty.'),
            field('Client reference (xref)', clientXref, 'The client’s id in the vendor’s systems.'),
            field('Vendor reference (xref)', vendorXref, 'The vendor’s id in the client’s systems.'),
          ]
        : [
            h('div', { class: 'field' }, h('span', { class: 'field-label' }, 'Client'), h('span', {}, org(p.client?.id), partyRef(p.client))),
            h('div', { class: 'field' }, h('span', { class: 'field-label' }, 'Vendor'), h('span', {}, org(p.vendor?.id), partyRef(p.vendor))),
          ],
    ),
    creating ? null : h('p', { class: 'field-hint' }, 'The parties of a workspace cannot be changed.'),
    status,
    actions.el,
  ]);
  const offer = keeper.offer();
  if (offer) form.prepend(offer);
  view.replaceChildren(pageHeader(title, { crumbs: creating ? [['Workspaces', '#/workspaces'], ['New']] : [['Workspaces', '#/workspaces'], [workspace.body.description || shortId(workspaceId), back], ['Edit']] }), form);
  description.focus();
  if (creating) await Promise.all([suggest(mine, 'organizations-mine'), suggest(other, 'organizations-other')]);
}

// ---------------------------------------------------------------------------
// Invitations: workspaces another tenant created naming an organization of
// yours as the other party. Until its tenant accepts, such a workspace is seen
// by the invited tenant only in `GET /v2/invitations`.

/** How many invitations the workspaces page lists (the rest are counted). */
const INVITATIONS = 100;

/**
 * The elements of the invitations section of the workspaces page (none when
 * there is no invitation): each invitation with its description, parties and
 * date, and Accept and Decline (after a confirmation naming the workspace).
 * `answered(text)` reads the lists again after an answer; a refusal is shown
 * on the invitation it concerns, and `refused()` reads the workspaces again
 * (the invitation may have been answered meanwhile by a colleague).
 */
function workspaceInvitations({ data, total }, org, { answered, refused }) {
  if (!data.length) return [];
  const items = data.map((w) => invitationItem(w, org, { answered, refused }));
  const more = total > data.length ? h('p', { class: 'muted small' }, `Showing the ${data.length} newest of ${total} invitations; answer these to see the others.`) : null;
  return [
    h(
      'section',
      { class: 'card invitations', 'aria-labelledby': 'invitations-title' },
      h('h2', { id: 'invitations-title' }, `Invitations (${total})`),
      h(
        'p',
        { class: 'field-hint' },
        'Another company created these workspaces naming one of your organizations as a party. Accept to work in one (it joins your workspaces); decline to refuse it for good. Until you answer, only the inviter sees it and no job can be recorded in it.',
      ),
      h('ul', { class: 'invitation-list', 'aria-label': 'Invitations' }, items),
      more,
    ),
  ];
}

/** One invitation of the list, with its actions and the place of their outcome. */
function invitationItem(w, org, { answered, refused }) {
  const name = w.body.description || `workspace ${shortId(w.id)}`;
  const titleId = `invitation-${w.id}`;
  const p = w.body.parties ?? {};
  const status = h('div', { class: 'invitation-status' });
  const accept = h('button', { type: 'button', class: 'button button-primary', 'aria-describedby': titleId }, 'Accept');
  const decline = h('button', { type: 'button', class: 'button button-danger', 'aria-describedby': titleId }, 'Decline');
  const ACTIONS = {
    accept: { button: accept, doing: 'Accepting', done: `You accepted the invitation to “${name}”: it is now one of your workspaces.`, failed: 'The invitation was not accepted' },
    decline: { button: decline, doing: 'Declining', done: `You declined the invitation to “${name}”.`, failed: 'The invitation was not declined' },
  };
  const answer = async (action) => {
    const what = ACTIONS[action];
    if (action === 'decline' && !window.confirm(`Decline the invitation to the workspace “${name}”? This cannot be undone: to work together after all, the inviter has to create a new workspace.`)) return;
    clearMessages();
    accept.disabled = decline.disabled = true;
    status.replaceChildren(h('p', { class: 'muted small', role: 'status' }, `${what.doing} the invitation…`));
    try {
      await api.request('POST', `/v2/workspaces/${encodeURIComponent(w.id)}/${action}`);
    } catch (err) {
      if (err?.sessionEnded) return;
      accept.disabled = decline.disabled = false;
      status.replaceChildren(errorMessage(err, isNetwork(err) ? 'Not answered: the server could not be reached' : what.failed));
      what.button.focus();
      // Answered or withdrawn meanwhile: the workspaces may have changed.
      if (err instanceof ApiError && (err.status === 409 || err.status === 404)) refused();
      return;
    }
    await answered(what.done).catch((err) => showError(err));
  };
  accept.addEventListener('click', () => answer('accept'));
  decline.addEventListener('click', () => answer('decline'));
  return h(
    'li',
    { class: 'invitation', 'aria-labelledby': titleId, data: { id: w.id } },
    h('h3', { id: titleId }, name),
    definitionList([
      ['Client', [org(p.client?.id), partyRef(p.client)]],
      ['Vendor', [org(p.vendor?.id), partyRef(p.vendor)]],
      ['Received', fmt.dateTime(w.created_at)],
    ]),
    h('div', { class: 'form-actions' }, accept, decline),
    status,
  );
}

// ---------------------------------------------------------------------------
// Start: every view, table and constant above is initialised by now.

function start() {
  window.addEventListener('hashchange', render);
  render();
}

start();
