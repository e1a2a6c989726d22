// End-to-end tests of the browser console: the real binary, seeded through
// its HTTP API, driven in headless Chromium (Debian's `chromium`, through
// playwright-core). Run with `node --test` in this directory (tests/e2e/run.sh
// installs what is needed and builds the binary first).
//
// The tests of this file share one server and one browser page and run in
// order: each continues where the previous one left the page.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { launch } from './browser.js';
import { ADMIN_PASSWORD, client, startProxy, startServer } from './server.js';
import { seed } from './seed.js';

const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

let server;
let ids;
let browser;
let context;
let page;
let shot;

before(async () => {
  server = await startServer();
  const api = client(server.base);
  await api.login('admin', ADMIN_PASSWORD);
  ids = await seed(api);
  browser = await launch(server.base);
  ({ context, page, shot } = browser);
});

after(async () => {
  await browser?.close();
  const result = await server?.stop();
  if (result && result.code !== 0) console.error(`server exit: ${JSON.stringify(result)}\n${server.logText?.() ?? ''}`);
});

const nav = (name) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name });
const alertText = () => page.getByRole('alert').first().innerText();
const sessionKey = () => page.evaluate(() => JSON.parse(sessionStorage.getItem('quayside.session') ?? 'null')?.key ?? null);

/** Waits until `predicate()` holds, polling, for at most 10 s. */
async function expectSoon(predicate, message) {
  const deadline = Date.now() + 10_000;
  while (!predicate()) {
    if (Date.now() > deadline) assert.fail(message);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function signIn(password = ADMIN_PASSWORD) {
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test('the page and its files are served with their types and security headers', async () => {
  const index = await fetch(`${server.base}/`);
  assert.equal(index.status, 200);
  assert.equal(index.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(index.headers.get('content-security-policy'), CSP);
  assert.equal(index.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(index.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  const etag = index.headers.get('etag');
  assert.match(etag, /^"[0-9a-f]{32}"$/);
  assert.match(await index.text(), /<script type="module" src="\/console\/app.js"><\/script>/);

  const again = await fetch(`${server.base}/`, { headers: { 'If-None-Match': etag } });
  assert.equal(again.status, 304);

  for (const [file, type] of [
    ['app.js', 'text/javascript; charset=utf-8'],
    ['api.js', 'text/javascript; charset=utf-8'],
    ['format.js', 'text/javascript; charset=utf-8'],
    ['app.css', 'text/css; charset=utf-8'],
  ]) {
    const reply = await fetch(`${server.base}/console/${file}`);
    assert.equal(reply.status, 200, file);
    assert.equal(reply.headers.get('content-type'), type, file);
    assert.equal(reply.headers.get('content-security-policy'), CSP, file);
    assert.ok((await reply.text()).length > 100, file);
  }

  const missing = await fetch(`${server.base}/console/missing.js`);
  assert.equal(missing.status, 404);
  const body = await missing.json();
  assert.equal(body.error.status, 404);
  assert.equal(body.error.code, 'not_found');
  assert.ok(body.error.message);
});

test('a wrong password shows the API error; the right one signs in', async () => {
  await page.goto(`${server.base}/`);
  await page.waitForURL(/#\/signin/);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await shot('01-sign-in');

  await signIn('not-the-password');
  assert.match(await alertText(), /Sign-in failed/);
  assert.match(await alertText(), /401 · unauthorized/);
  assert.equal(await sessionKey(), null);

  // `next` only ever leads to a page of the console, never to another address.
  await page.goto(`${server.base}/#/signin?next=${encodeURIComponent('https://example.invalid/')}`);
  await signIn();
  await page.waitForURL(/#\/ports/);
  await page.getByText('Signed in as').waitFor();
  assert.equal(await page.locator('#account-name').innerText(), 'admin');
  assert.match(await sessionKey(), /^[A-Za-z0-9_-]{43}$/);
});

test('ports: search by name, country and status, paged, with DMS positions', async () => {
  const results = page.getByRole('table', { name: 'Ports found' });
  await results.waitFor();
  assert.match(await page.locator('.results-count').innerText(), /Showing 1–8 of 8/);

  await page.getByLabel('Name contains').fill('rotter');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.waitForURL(/name=rotter/);
  await page.locator('.results-count', { hasText: 'Showing 1–1 of 1' }).waitFor();
  const row = results.locator('tbody tr');
  assert.equal(await row.count(), 1);
  assert.match(await row.innerText(), /NLRTM\s+Rotterdam\s+NL\s+51°55′00″N 4°30′00″E\s+ACTIVE/);

  await page.getByLabel('Name contains').fill('');
  await page.getByLabel('Country').fill('nl');
  await page.getByLabel('Status').selectOption('INACTIVE');
  await page.getByRole('button', { name: 'Search' }).click();
  // "Showing 1–1 of 1" is on screen already, from the search before: wait for
  // the row this search finds instead (never for a state that may be stale).
  await page.waitForURL(/countryCode=NL&statusCode=INACTIVE/);
  await results.locator('tbody tr', { hasText: 'NLVLI' }).waitFor();
  assert.equal(await results.locator('tbody tr').count(), 1);
  assert.match(await page.locator('.results-count').innerText(), /Showing 1–1 of 1/);
  assert.match(await results.locator('tbody tr').innerText(), /NLVLI\s+Vlissingen\s+NL\s+51°26′00″N 3°35′00″E\s+INACTIVE/);

  // Southern and western hemispheres, seconds with decimals.
  await page.goto(`${server.base}/#/ports?countryCode=BR`);
  await results.locator('tbody tr', { hasText: 'BRSSZ' }).waitFor();
  assert.equal(await results.locator('tbody tr').count(), 1);
  assert.match(await results.locator('tbody tr').innerText(), /23°57′00″S 46°20′00″W/);
  await page.goto(`${server.base}/#/ports?name=hamburg`);
  await results.locator('tbody tr', { hasText: 'DEHAM' }).waitFor();
  assert.equal(await results.locator('tbody tr').count(), 1);
  assert.match(await results.locator('tbody tr').innerText(), /53°33′07.5″N 9°59′00″E/);

  // Paging: three per page over eight ports.
  await page.goto(`${server.base}/#/ports?resultsPerPage=3`);
  await page.locator('.results-count', { hasText: 'Showing 1–3 of 8' }).waitFor();
  await page.getByRole('link', { name: 'Next ›' }).click();
  await page.locator('.results-count', { hasText: 'Showing 4–6 of 8' }).waitFor();
  assert.match(await page.locator('.pager-pos').innerText(), /Page 2 of 3/);
  assert.deepEqual(await results.locator('tbody tr td:first-child').allInnerTexts(), ['NLAMS', 'NLRTM', 'NLVLI']);

  // Modification dates: every seeded port was modified today, none tomorrow.
  const today = new Date().toISOString().slice(0, 10);
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  await page.goto(`${server.base}/#/ports?dateModifiedFrom=${today}&dateModifiedTo=${today}`);
  await page.locator('.results-count', { hasText: 'Showing 1–8 of 8' }).waitFor();
  await page.goto(`${server.base}/#/ports?dateModifiedFrom=${tomorrow}`);
  await page.locator('.results-count', { hasText: 'No ports match.' }).waitFor();

  await page.goto(`${server.base}/#/ports`);
  await page.locator('.results-count', { hasText: 'Showing 1–8 of 8' }).waitFor();
  await shot('02-ports-search');

  await results.getByRole('link', { name: 'NLRTM' }).click();
  await page.getByRole('heading', { name: 'Rotterdam' }).waitFor();
  assert.equal(await page.getByTestId('position').innerText(), '51°55′00″N 4°30′00″E');
  assert.match(await page.locator('.details').innerText(), /51\.91667, 4\.50000/);
  await shot('03-port');
});

test('ports: an invalid country code shows the API error; create, edit and deactivate', async () => {
  await page.goto(`${server.base}/#/ports`);
  await page.getByRole('link', { name: 'New port' }).click();
  await page.getByRole('heading', { name: 'New port' }).waitFor();
  await page.getByLabel('Code', { exact: true }).fill('XXTST');
  await page.getByLabel('Name', { exact: true }).fill('Test harbour');
  await page.getByLabel('Country code').fill('ZZ');
  await page.getByLabel('latitudeDeg').fill('12');
  await page.getByLabel('latitudeMin').fill('5');
  await page.getByLabel('latitudeSec').fill('30.5');
  await page.getByLabel('latitudeNs').selectOption('S');
  assert.equal(await page.locator('output').innerText(), '12°05′30.5″S');
  await page.getByRole('button', { name: 'Create port' }).click();

  const alert = page.getByRole('alert');
  await alert.waitFor();
  const text = await alert.innerText();
  assert.match(text, /The request was refused/);
  assert.match(text, /countryCode must be an ISO 3166-1 alpha-2 country code in upper case, such as NL \(got "ZZ"\)/);
  assert.match(text, /Field: countryCode/);
  assert.match(text, /400 · invalid_field/);
  assert.equal(await page.getByLabel('Country code').getAttribute('aria-invalid'), 'true');
  await shot('04-api-error');

  // Nothing was stored; fix the field and create.
  await page.getByLabel('Country code').fill('PT');
  await page.getByRole('button', { name: 'Create port' }).click();
  await page.getByRole('heading', { name: 'Test harbour' }).waitFor();
  assert.match(await page.getByRole('status').filter({ hasText: 'was created' }).innerText(), /Port XXTST was created/);
  assert.equal(await page.getByTestId('position').innerText(), '12°05′30.5″S');

  // A second "new" record with the same code is refused before anything is replaced.
  await page.goto(`${server.base}/#/ports/new`);
  await page.getByLabel('Code', { exact: true }).fill('XXTST');
  await page.getByLabel('Name', { exact: true }).fill('Impostor');
  await page.getByRole('button', { name: 'Create port' }).click();
  assert.match(await alertText(), /exists already \(Test harbour\)/);

  // Edit: the form holds the record; PUT replaces it.
  await page.goto(`${server.base}/#/ports/XXTST`);
  await page.getByRole('link', { name: 'Edit' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Test harbour (north quay)');
  await page.getByLabel('longitudeDeg').fill('8');
  await page.getByLabel('longitudeWe').selectOption('W');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('heading', { name: 'Test harbour (north quay)' }).waitFor();
  assert.equal(await page.getByTestId('position').innerText(), '12°05′30.5″S 8°00′00″W');

  // Deactivate (confirmed in a dialog), then delete for good.
  page.once('dialog', (dialog) => dialog.accept());
  await page.getByRole('button', { name: 'Deactivate' }).click();
  await page.getByRole('status').filter({ hasText: 'is now INACTIVE' }).waitFor();
  await page.getByRole('button', { name: 'Delete for good' }).waitFor();
  page.once('dialog', (dialog) => dialog.accept());
  await page.getByRole('button', { name: 'Delete for good' }).click();
  await page.getByRole('status').filter({ hasText: 'Port XXTST was deleted.' }).waitFor();
  await page.waitForURL(/#\/ports$/);
});

test('inland facilities: the same search', async () => {
  await nav('Inland facilities').click();
  const results = page.getByRole('table', { name: 'Inland facilities found' });
  await results.waitFor();
  assert.deepEqual(await results.locator('tbody tr td:first-child').allInnerTexts(), ['BEGNE', 'DEDUI']);
  assert.match(await results.locator('tbody tr').last().innerText(), /Duisburg inland port\s+DE\s+51°26′00″N 6°45′00″E/);
});

test('workspaces: a loading state, then the list with organization names', async () => {
  // Hold the list back to see the loading state.
  let release;
  const held = new Promise((resolve) => (release = resolve));
  const list = /\/workspaces\?limit=/;
  await page.route(list, async (route) => {
    await held;
    await route.fallback().catch(() => {});
  });
  await nav('Workspaces').click();
  await page.locator('#busy').waitFor({ state: 'visible' });
  await page.locator('.placeholder', { hasText: 'Loading…' }).waitFor();
  assert.equal(await page.locator('#main').getAttribute('aria-busy'), 'true');
  release();
  await page.unroute(list);

  const table = page.getByRole('table', { name: 'Workspaces' });
  await table.waitFor();
  await page.locator('#busy').waitFor({ state: 'hidden' });
  const rows = await table.locator('tbody tr').allInnerTexts();
  assert.equal(rows.length, 2);
  assert.match(rows[0], /MT Nordic Star, Rotterdam discharge\s+Northsea Trading \(C-77\)\s+Harbour Inspection BV \(V-12\)/);
  await shot('05-workspaces');
});

test('a workspace: its jobs with status, activity, ETA, location and cargo', async () => {
  await page.getByRole('link', { name: 'MT Nordic Star, Rotterdam discharge' }).click();
  const jobs = page.getByRole('table', { name: 'Jobs' });
  await jobs.waitFor();
  const rows = await jobs.locator('tbody tr').allInnerTexts();
  assert.equal(rows.length, 2);
  assert.match(rows[0], /J-2026-114\s+HI-RTM-0114\s+ACTIVE\s+discharge\s+2026-12-01 09:00 UTC\s+Rotterdam\s+Gasoil 10ppm · 5,000 MT\s+MT Nordic Star/);
  assert.match(rows[1], /J-2026-115\s+PENDING\s+load\s+2026-12-04 06:00 UTC\s+Antwerp\s+Jet A-1 · 12,000 m3\s+MT Baltic Dawn/);
  await shot('06-workspace');

  await page.getByLabel('Job status').selectOption('pending');
  await page.waitForURL(/status=pending/);
  // J-2026-115 is on screen already: wait for the active job to go, then for the filtered list.
  await jobs.locator('tbody tr', { hasText: 'J-2026-114' }).waitFor({ state: 'detached' });
  await jobs.locator('tbody tr', { hasText: 'J-2026-115' }).waitFor();
  assert.equal(await jobs.locator('tbody tr').count(), 1);
  await page.getByLabel('Job status').selectOption('');
  await jobs.locator('tbody tr', { hasText: 'J-2026-114' }).waitFor();
});

test('a job: load port information, quantity side by side, quality with off-spec marked, time log in order', async () => {
  await page.getByRole('link', { name: 'J-2026-114' }).click();
  await page.getByRole('heading', { name: 'J-2026-114', exact: true }).waitFor();

  const lpi = page.getByRole('region', { name: 'Load port information' });
  assert.match(await lpi.innerText(), /Port of loading\s+Primorsk/i);
  assert.match(await lpi.getByRole('table').innerText(), /GSV\s+Gross standard volume\s+5,921.4\s+m3/);

  const quantity = page.getByRole('table', { name: 'Quantity: source and destination' });
  assert.deepEqual(await quantity.locator('thead th').allTextContents(), ['', 'Source', 'Destination', 'Difference']);
  assert.match(await quantity.locator('tr', { hasText: 'Gross standard volume' }).innerText(), /5,919.8 m3\s+5,911.3 m3\s+-8.5 \(-0.14 %\)/);
  assert.match(await quantity.locator('tr', { hasText: 'Mean temperature' }).innerText(), /18.5 degC\s+16 degC/);
  assert.match(await quantity.locator('tr', { hasText: 'VCF table' }).innerText(), /ASTM 54B\s+ASTM 54B/);

  const quality = page.getByRole('table', { name: 'Quality results' });
  assert.equal(await quality.locator('tbody tr').count(), 4);
  const offSpec = quality.locator('tbody tr.offspec');
  assert.equal(await offSpec.count(), 1);
  assert.match(await offSpec.innerText(), /Sulphur content[\s\S]*12.4 mg\/kg[\s\S]*OFF SPEC/);
  assert.match(await page.getByRole('region', { name: 'Quality' }).innerText(), /1 result is off specification/);
  assert.match(await quality.locator('tbody tr').nth(2).innerText(), /Flash point\s+ASTM D93\s+> 62 degC/);

  const timelog = page.getByRole('list', { name: 'Time log, ordered by start' });
  const events = await timelog.locator('.tl-type').allInnerTexts();
  assert.deepEqual(events, ['Vessel arrived', 'NOR tendered', 'Hoses connected', 'Discharge', 'Waiting for shore tank', 'Hoses disconnected']);
  assert.match(await timelog.locator('li', { hasText: 'Waiting for shore tank' }).innerText(), /DELAY[\s\S]*2026-12-01 17:05 – 19:35 · 2 h 30 min[\s\S]*Shore tank 42 not ready/);
  assert.equal(await timelog.locator('.tl-bar').count(), 4);
  assert.equal(await timelog.locator('.tl-point').count(), 2);
  await shot('07-job');
});

test('attachments: upload with progress, download the same bytes', async () => {
  const attachments = page.getByRole('region', { name: 'Attachments' });
  await attachments.getByText('No attachments yet.').waitFor();

  const bytes = crypto.randomBytes(3 * 1024 * 1024 + 123);
  const file = path.join(server.dir, 'ullage report.pdf');
  fs.writeFileSync(file, bytes);

  // Record every progress state the page shows.
  await page.evaluate(() => {
    window.uploadStates = [];
    const status = document.querySelector('.upload-status');
    new MutationObserver(() => window.uploadStates.push(status.textContent)).observe(status, { childList: true, characterData: true, subtree: true });
  });
  await attachments.getByLabel('Attach a file').setInputFiles(file);
  await attachments.getByRole('button', { name: 'Upload' }).click();
  await attachments.getByText('Uploaded ullage report.pdf (3.1 MB).').waitFor();
  assert.equal(await attachments.locator('progress').evaluate((p) => p.value), 100);
  const states = await page.evaluate(() => window.uploadStates);
  assert.ok(states.some((s) => /^Uploading ullage report\.pdf/.test(s)), JSON.stringify(states));
  assert.ok(states.some((s) => /: 100 % \(3.1 MB of 3.1 MB\)$/.test(s)), JSON.stringify(states));

  const table = attachments.getByRole('table', { name: 'Attachments' });
  const row = table.locator('tbody tr', { hasText: 'ullage report.pdf' });
  const sha256 = crypto.createHash('sha256').update(bytes).digest('hex');
  assert.match(await row.innerText(), new RegExp(`ullage report\\.pdf\\s+application/pdf\\s+3\\.1 MB\\s+${sha256.slice(0, 12)}…`));
  await shot('08-attachments', attachments);

  const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Download' }).click()]);
  assert.equal(download.suggestedFilename(), 'ullage report.pdf');
  const saved = fs.readFileSync(await download.path());
  assert.equal(saved.length, bytes.length);
  assert.ok(saved.equals(bytes), 'downloaded bytes differ from the uploaded ones');
  await attachments.getByText('Downloaded ullage report.pdf (3.1 MB).').waitFor();

  // The server holds the same bytes.
  const api = client(server.base);
  await api.login('admin', ADMIN_PASSWORD);
  const files = (await api.get(`/workspaces/${ids.workspace}/jobs/${ids.job}/files`)).body;
  assert.equal(files.length, 1);
  assert.equal(files[0].body.sha256, sha256);

  // Delete it again (confirmed in a dialog).
  page.once('dialog', (dialog) => dialog.accept());
  await row.getByRole('button', { name: 'Delete' }).click();
  await attachments.getByText('No attachments yet.').waitFor();
});

// ---------------------------------------------------------------------------
// Live: the job's page follows the workspace's change feed

/** A quality result of the seeded job's first set, with `extra` fields. */
const qualityResult = (extra) => ({
  status: 'confirmed', setNumber: 2, sample: { location: 'Shore tank 42' }, method: { name: 'ASTM D445' }, uom: { name: 'mm2/s' }, resultOperator: 'eq', ...extra,
});

/** A signed-in API client of its own (not the page's session). */
async function apiClient() {
  const api = client(server.base);
  await api.login('admin', ADMIN_PASSWORD);
  return api;
}

/** The live mark of `on` in `state` ("live", "reconnecting", ...), waited for. */
const liveMark = (on, state) => on.locator(`[data-testid="live"][data-state="${state}"]`);

test('live: results made elsewhere appear, change and go on the job page without a reload', async () => {
  const api = await apiClient();
  const jb = `/workspaces/${ids.workspace}/jobs/${ids.job}`;
  await page.getByRole('heading', { name: 'J-2026-114', exact: true }).waitFor();
  await liveMark(page, 'live').waitFor();
  assert.equal(await page.getByTestId('live').innerText(), 'Live');
  // Anything the page asks for from now on is recorded: nothing is polled or reloaded.
  await page.evaluate(() => (window.notReloaded = true));
  const asked = [];
  const record = (request) => asked.push(`${request.method()} ${new URL(request.url()).pathname}`);
  page.on('request', record);

  // A quality result: appears; changed: drawn again (off spec now); deleted: gone.
  const quality = page.getByRole('table', { name: 'Quality results' });
  const created = await api.post(`${jb}/quality`, qualityResult({ testNumber: 5, test: { xref: 'VISC', name: 'Kinematic viscosity' }, result: 3.1 }));
  const row = quality.locator(`tbody tr[data-id="${created.body.id}"]`);
  await row.waitFor({ timeout: 10_000 });
  assert.match(await row.innerText(), /2\.5\s+Kinematic viscosity\s+ASTM D445\s+3\.1 mm2\/s\s+Shore tank 42/);
  assert.equal(await quality.locator('tbody tr').count(), 5);
  await api.call('PATCH', `${jb}/quality/${created.body.id}`, { isOffSpec: true, notes: 'Limit 4.5 mm2/s' });
  await quality.locator(`tbody tr.offspec[data-id="${created.body.id}"]`).waitFor({ timeout: 10_000 });
  await page.getByRole('region', { name: 'Quality' }).getByText('2 results are off specification.').waitFor();
  await shot('10-live-quality');
  await api.call('DELETE', `${jb}/quality/${created.body.id}`);
  await row.waitFor({ state: 'detached', timeout: 10_000 });
  assert.equal(await quality.locator('tbody tr').count(), 4);
  await page.getByRole('region', { name: 'Quality' }).getByText('1 result is off specification.').waitFor();

  // A quantity result: the destination side deleted ("no result"), then measured again.
  const quantity = page.getByRole('table', { name: 'Quantity: source and destination' });
  const gsv = quantity.locator('tr', { hasText: 'Gross standard volume' });
  const destination = (await api.get(`${jb}/quantity?direction=destination`)).body[0];
  await api.call('DELETE', `${jb}/quantity/${destination.id}`);
  await quantity.locator('tr', { hasText: 'Gross standard volume' }).filter({ hasText: 'no result' }).waitFor({ timeout: 10_000 });
  await api.post(`${jb}/quantity`, {
    date: '2026-12-02T07:00:00Z', direction: 'destination', activeShoreTank: true,
    measurements: [{ code: 'GSV', name: 'Gross standard volume', uom: { name: 'm3' }, value: 5915.3 }],
    meanTemp: { value: 15.5, uom: { name: 'degF' } },
  });
  await gsv.filter({ hasText: '5,915.3 m3' }).waitFor({ timeout: 10_000 });
  assert.match(await gsv.innerText(), /5,919.8 m3\s+5,915.3 m3\s+-4.5 \(-0.08 %\)/);
  // A unit the page had not seen before is named, not shown as an id.
  assert.match(await quantity.locator('tr', { hasText: 'Mean temperature' }).innerText(), /18.5 degC\s+15.5 degF/);

  // The job itself, a time log entry and a file.
  await api.call('PATCH', jb, { notes: 'Shore tank 42 released at 07:00.' });
  await page.locator('.details').getByText('Shore tank 42 released at 07:00.').waitFor({ timeout: 10_000 });
  const timelog = page.getByRole('list', { name: 'Time log, ordered by start' });
  const entry = await api.post(`${jb}/timelog`, { type: { name: 'Documents on board' }, category: 'event', start: '2026-12-02T06:30:00Z' });
  await timelog.locator(`li[data-id="${entry.body.id}"]`, { hasText: 'Documents on board' }).waitFor({ timeout: 10_000 });
  assert.equal((await timelog.locator('.tl-type').allInnerTexts()).at(-1), 'Documents on board');
  const form = new FormData();
  form.append('file', new Blob(['draft survey'], { type: 'text/plain' }), 'draft survey.txt');
  const key = await api.login('admin', ADMIN_PASSWORD);
  const uploaded = await fetch(`${server.base}${jb}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  assert.equal(uploaded.status, 201);
  const file = await uploaded.json();
  const attachments = page.getByRole('region', { name: 'Attachments' });
  await attachments.locator('tbody tr', { hasText: 'draft survey.txt' }).waitFor({ timeout: 10_000 });
  await api.call('DELETE', `${jb}/files/${file.id}`);
  await api.call('DELETE', `${jb}/timelog/${entry.body.id}`);
  await attachments.getByText('No attachments yet.').waitFor({ timeout: 10_000 });
  await timelog.locator(`li[data-id="${entry.body.id}"]`).waitFor({ state: 'detached', timeout: 10_000 });

  page.off('request', record);
  assert.equal(await page.evaluate(() => window.notReloaded), true, 'the page was reloaded');
  assert.deepEqual(asked, [], 'the page asked the server for something instead of following the stream');
  assert.equal(await page.getByTestId('live').getAttribute('data-state'), 'live');
});

test('live: a cut connection shows "reconnecting", then resumes from the last change seen', async () => {
  // A second tab, through a proxy that can cut the connection as a network would.
  const api = await apiClient();
  const jb = `/workspaces/${ids.workspace}/jobs/${ids.job}`;
  const proxy = await startProxy(server.base);
  const tab = await context.newPage();
  browser.watch(tab, proxy.base);
  const streams = [];
  const aborted = [];
  tab.on('request', (request) => request.headers().accept === 'text/event-stream' && streams.push(request));
  tab.on('requestfailed', (request) => request.headers().accept === 'text/event-stream' && aborted.push(request.failure()?.errorText));
  try {
    await tab.goto(`${proxy.base}/#/workspaces/${ids.workspace}/jobs/${ids.job}`);
    await tab.getByLabel('Username').fill('admin');
    await tab.getByLabel('Password').fill(ADMIN_PASSWORD);
    await tab.getByRole('button', { name: 'Sign in' }).click();
    await liveMark(tab, 'live').waitFor();
    const quality = tab.getByRole('table', { name: 'Quality results' });
    const first = await api.post(`${jb}/quality`, qualityResult({ testNumber: 6, test: { name: 'Pour point' }, result: -9 }));
    await quality.locator(`tbody tr[data-id="${first.body.id}"]`).waitFor({ timeout: 10_000 });
    const seen = (await api.get(`/v2/workspaces/${ids.workspace}/changes?since=now`)).body.next;

    // Cut, and keep it cut while a result is deleted and another made.
    proxy.refuse(true);
    proxy.drop();
    await liveMark(tab, 'reconnecting').waitFor({ timeout: 10_000 });
    assert.equal(await tab.getByTestId('live').innerText(), 'Reconnecting…');
    await shot('11-live-reconnecting', tab.locator('.page-header'));
    await api.call('DELETE', `${jb}/quality/${first.body.id}`);
    const second = await api.post(`${jb}/quality`, qualityResult({ testNumber: 7, test: { name: 'Cloud point' }, result: -2 }));
    const resumes = streams.length;
    proxy.refuse(false);

    // Both arrive once the stream is back, asked for from the last change seen.
    await quality.locator(`tbody tr[data-id="${second.body.id}"]`).waitFor({ timeout: 20_000 });
    await quality.locator(`tbody tr[data-id="${first.body.id}"]`).waitFor({ state: 'detached', timeout: 10_000 });
    await liveMark(tab, 'live').waitFor();
    const resumed = streams.slice(resumes);
    assert.ok(resumed.length >= 1, 'no new stream request');
    assert.equal(resumed.at(-1).headers()['last-event-id'], String(seen));
    await api.call('DELETE', `${jb}/quality/${second.body.id}`);
    await quality.locator(`tbody tr[data-id="${second.body.id}"]`).waitFor({ state: 'detached', timeout: 10_000 });

    // Leaving the page ends the stream.
    const before = aborted.length;
    await tab.getByRole('link', { name: 'Workspaces' }).first().click();
    await tab.getByRole('table', { name: 'Workspaces' }).waitFor();
    await expectSoon(() => aborted.length > before, 'the stream was not aborted when the page left the job');
    assert.match(aborted.at(-1), /ABORTED/);
  } finally {
    await tab.close();
    await proxy.close();
  }
});

test('live: 410 cursor_expired reloads the job\'s lists, then goes on from the error\'s next', async () => {
  const api = await apiClient();
  const jb = `/workspaces/${ids.workspace}/jobs/${ids.job}`;
  const quality = page.getByRole('table', { name: 'Quality results' });
  let missed;
  let next;
  const streams = [];
  const lists = [];
  const watch = (request) => {
    const { pathname } = new URL(request.url());
    if (request.headers().accept === 'text/event-stream') streams.push(request.headers()['last-event-id']);
    if (pathname === `${jb}/quality`) lists.push(pathname);
  };
  // The first stream request of the page answers 410, as when retention passed
  // the cursor; a result made just before is then in no list the page holds.
  const isFeed = (url) => url.pathname === `/v2/workspaces/${ids.workspace}/changes`;
  await page.route(isFeed, async (route) => {
    if (missed || route.request().headers().accept !== 'text/event-stream') return route.fallback();
    missed = await api.post(`${jb}/quality`, qualityResult({ testNumber: 8, test: { name: 'Ash content' }, result: 0.001 }));
    next = (await api.get(`/v2/workspaces/${ids.workspace}/changes?since=now`)).body.next;
    await route.fulfill({
      status: 410,
      contentType: 'application/json',
      body: JSON.stringify({ error: { status: 410, code: 'cursor_expired', message: 'The cursor is older than the change log keeps.', next } }),
    });
  });
  try {
    await nav('Workspaces').click();
    await page.getByRole('table', { name: 'Workspaces' }).waitFor();
    page.on('request', watch);
    await page.goBack();
    await page.getByRole('heading', { name: 'J-2026-114', exact: true }).waitFor();
    await expectSoon(() => missed, 'the stream was not asked for');
    await quality.locator(`tbody tr[data-id="${missed.body.id}"]`).waitFor({ timeout: 10_000 });
    await liveMark(page, 'live').waitFor({ timeout: 10_000 });
    // The lists were read again, and the stream went on from the error's `next`.
    assert.equal(lists.length, 2, 'the quality list was not read again');
    assert.equal(streams.length, 2);
    assert.equal(streams[1], String(next));
    // And it goes on live.
    await api.call('DELETE', `${jb}/quality/${missed.body.id}`);
    await quality.locator(`tbody tr[data-id="${missed.body.id}"]`).waitFor({ state: 'detached', timeout: 10_000 });
    assert.equal(await quality.locator('tbody tr').count(), 4);
  } finally {
    page.off('request', watch);
    await page.unroute(isFeed);
  }
});

test('an ended session returns to sign-in with a message, and back to the page after', async () => {
  const jobHash = new URL(page.url()).hash;
  const key = await sessionKey();
  const reply = await fetch(`${server.base}/api/rest/1.0/sessions/admin`, { method: 'DELETE', headers: { Authorization: `Bearer ${key}` } });
  assert.equal(reply.status, 204);

  await nav('Workspaces').click();
  await page.waitForURL(/#\/signin/);
  const message = page.getByRole('status').filter({ hasText: 'Your session has ended' });
  await message.waitFor();
  assert.equal(await sessionKey(), null);
  await signIn();
  await page.getByRole('table', { name: 'Workspaces' }).waitFor();
  await page.goto(`${server.base}/${jobHash}`);
  await page.getByRole('heading', { name: 'J-2026-114', exact: true }).waitFor();
});

test('sign out ends the session on the server', async () => {
  const key = await sessionKey();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/#\/signin$/);
  await page.getByRole('status').filter({ hasText: 'You are signed out.' }).waitFor();
  assert.equal(await sessionKey(), null);
  assert.ok(await page.locator('#nav').isHidden());
  const reply = await fetch(`${server.base}/workspaces`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(reply.status, 401);
  await shot('09-signed-out');

  // Without a key every page leads to sign-in.
  await page.goto(`${server.base}/#/workspaces`);
  await page.waitForURL(/#\/signin\?next=/);
});

test('the page broke no rule: no script errors, no CSP violations, no request off the server', () => {
  assert.deepEqual(browser.pageErrors, []);
  assert.deepEqual(browser.cspViolations, []);
  assert.deepEqual(browser.foreignRequests, []);
});
