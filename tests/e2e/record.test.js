// End-to-end tests of recording in the console: an inspector creates a
// workspace and a job, enters quality certificates (by keyboard and by paste),
// load port information, both quantity sides and the time log, meets the
// API's refusals in place, gets a draft back after a reload and prints the
// job report to PDF. The real binary, seeded with two organizations only;
// everything else is made through the console and checked through the API.
//
// The tests of this file share one server and one browser page and run in
// order: each continues where the previous one left the page.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { launch } from './browser.js';
import { pdfText } from './pdftext.js';
import { ADMIN_PASSWORD, client, startServer } from './server.js';

let server;
let api;
let browser;
let page;
let shot;
const ids = {};

before(async () => {
  server = await startServer();
  api = client(server.base);
  await api.login('admin', ADMIN_PASSWORD);
  ids.shipper = (await api.post('/v2/organizations', { body: { name: 'Northsea Trading', category: 'shipper' } })).body.id;
  ids.inspector = (await api.post('/v2/organizations', { body: { name: 'Harbour Inspection BV', category: 'inspector' } })).body.id;
  browser = await launch(server.base);
  page = browser.page;
  shot = browser.shot;
});

after(async () => {
  await browser?.close();
  const result = await server?.stop();
  if (result && result.code !== 0) console.error(`server exit: ${JSON.stringify(result)}\n${server.logText?.() ?? ''}`);
});

const jobPath = () => `/workspaces/${ids.workspace}/jobs/${ids.job}`;
const region = (name) => page.getByRole('region', { name, exact: true });
/** Answers the next dialog with OK and hands back its message. */
const acceptNextDialog = () =>
  new Promise((resolve) => {
    page.once('dialog', async (dialog) => {
      const text = dialog.message();
      await dialog.accept();
      resolve(text);
    });
  });
/** A cell of an editor's grid, by its column label and row number. */
const cell = (root, column, row) => root.getByLabel(`${column}, row ${row}`, { exact: true });

test('workspaces: create one with two parties from the registry, then edit its description', async () => {
  await page.goto(`${server.base}/#/workspaces`);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('No workspaces yet.').waitFor();

  await page.getByRole('link', { name: 'New workspace' }).click();
  const form = page.getByRole('form', { name: 'New workspace' });
  await form.waitFor();
  await form.getByLabel('Description').fill('MT Nordic Star, Rotterdam discharge');
  await form.getByLabel('Your organization is').selectOption('vendor');
  await form.getByLabel('Your organization', { exact: true }).fill('Harbour Inspection BV');
  // A name that is not in the registry is refused on its field, before anything is sent.
  await form.getByLabel('The other party').fill('Northsea');
  await form.getByLabel('Client reference (xref)').fill('C-77');
  await form.getByRole('button', { name: 'Create workspace' }).click();
  const other = form.getByLabel('The other party');
  await form.locator('[name="other"][aria-invalid="true"]').waitFor();
  assert.match(await form.locator('.field-error').innerText(), /No organization of the registry is named “Northsea”/);
  assert.equal(await page.evaluate(() => document.activeElement?.name), 'other');
  await other.fill('Northsea Trading');
  await shot('20-workspace-form');
  await form.getByRole('button', { name: 'Create workspace' }).click();
  await page.getByRole('heading', { name: 'MT Nordic Star, Rotterdam discharge', level: 1 }).waitFor();
  ids.workspace = decodeURIComponent(new URL(page.url()).hash.split('/')[2]);
  const stored = (await api.get(`/v2/workspaces/${ids.workspace}`)).body.body;
  assert.deepEqual(stored.parties, { client: { id: ids.shipper, xref: 'C-77' }, vendor: { id: ids.inspector, xref: null } });

  await page.getByRole('link', { name: 'Edit description' }).click();
  const edit = page.getByRole('form', { name: /^Edit / });
  await edit.getByLabel('Description').fill('MT Nordic Star, Rotterdam discharge (berth 4)');
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('heading', { name: 'MT Nordic Star, Rotterdam discharge (berth 4)', level: 1 }).waitFor();
  assert.equal((await api.get(`/v2/workspaces/${ids.workspace}`)).body.body.description, 'MT Nordic Star, Rotterdam discharge (berth 4)');
});

test('jobs: create one with new catalog items picked by typing, edit it, change its status', async () => {
  // The workspace already knows one location, by xref BEANR.
  const antwerp = (await api.post(`/workspaces/${ids.workspace}/catalogs/locations`, { xref: 'BEANR', name: 'Antwerp' })).body.id;
  await page.getByRole('link', { name: 'New job' }).click();
  const form = page.getByRole('form', { name: 'New job' });
  await form.waitFor();
  await form.getByLabel('Job reference (xref)').fill('J-2026-900');
  await form.getByLabel('Reference number').fill('HI-RTM-0900');
  await form.getByLabel('Trip number').fill('NS-44');
  await form.getByLabel('Activity').selectOption('discharge');
  await form.getByLabel('ETA (UTC)').fill('2026-12-01T09:00');
  await form.getByLabel('ETC (UTC)').fill('2026-12-02T18:00');
  await form.getByLabel('Location').fill('Rotterdam');
  assert.equal(await form.locator('.catalog-note').first().innerText(), 'New: adds “Rotterdam” to the locations');
  await form.getByLabel('Product').fill('Gasoil 10ppm');
  await form.getByLabel('Cargo quantity').fill('5,000');
  await form.getByLabel('Cargo unit').fill('MT');
  await form.getByLabel('Quantity', { exact: true }).check();
  await form.getByLabel('Quality', { exact: true }).check();
  await form.getByLabel('Time log', { exact: true }).check();
  await form.getByLabel('Notes and instructions').fill('Discharge to shore tanks 41 and 42.');
  // Transports: Enter in a cell adds the next row.
  await cell(form, 'Transport', 1).fill('MT Nordic Star');
  await cell(form, 'Transport', 1).press('Enter');
  await cell(form, 'Transport', 2).waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Transport, row 2');
  await page.keyboard.type('Tug Smit Rotterdam');
  await shot('21-job-form');
  await form.getByRole('button', { name: 'Create job' }).click();
  await page.getByRole('heading', { name: 'J-2026-900', exact: true }).waitFor();
  ids.job = decodeURIComponent(new URL(page.url()).hash.split('/')[4]);

  const job = (await api.get(jobPath())).body;
  assert.equal(job.status, 'pending');
  assert.equal(job.activity, 'discharge');
  assert.equal(job.eta, '2026-12-01T09:00:00.000Z');
  assert.equal(job.cargo.quantity, 5000);
  assert.deepEqual(job.requested, { quality: true, quantity: true, timelog: true });
  assert.equal(job.transports.length, 2);
  const catalog = async (name) => (await api.get(`/workspaces/${ids.workspace}/catalogs/${name}`)).body;
  const rotterdam = (await catalog('locations')).find((r) => r.body.name === 'Rotterdam');
  assert.ok(rotterdam, 'the new location was not created');
  assert.equal(job.location, rotterdam.id);
  assert.deepEqual((await catalog('transports')).map((r) => r.body.name).sort(), ['MT Nordic Star', 'Tug Smit Rotterdam']);
  assert.match(await page.locator('.details').innerText(), /Transport\s+MT Nordic Star, Tug Smit Rotterdam/i);

  // Edit: an existing location is found by its xref, in any case; a transport goes.
  await page.getByRole('link', { name: 'Edit job' }).click();
  const edit = page.getByRole('form', { name: 'Edit J-2026-900' });
  assert.equal(await edit.locator('.catalog-note').first().innerText(), 'Existing: Rotterdam');
  await edit.getByLabel('Location').fill('beanr');
  assert.equal(await edit.locator('.catalog-note').first().innerText(), 'Existing: Antwerp (BEANR)');
  await edit.getByLabel('Trip number').fill('');
  await edit.getByRole('button', { name: 'Remove row 2' }).click();
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('.details').getByText('Antwerp').waitFor();
  const edited = (await api.get(jobPath())).body;
  assert.equal(edited.location, antwerp);
  assert.equal(edited.tripNumber, undefined);
  assert.equal(edited.transports.length, 1);
  assert.equal((await catalog('locations')).length, 2);

  // Status: the changes the API allows, as actions; its refusal in place.
  const statusActions = page.getByRole('group', { name: 'Change the job status' });
  await statusActions.getByRole('button', { name: 'Start (active)' }).click();
  await statusActions.getByRole('button', { name: 'Complete' }).waitFor();
  assert.equal((await api.get(jobPath())).body.status, 'active');
  await statusActions.getByRole('button', { name: 'Complete' }).click();
  const refusal = page.locator('.status-note').getByRole('alert');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /The job was not moved to complete/);
  assert.match(await refusal.innerText(), /409 · job_incomplete/);
  assert.equal((await api.get(jobPath())).body.status, 'active');
  await shot('22-job-status-refused');
});

/** The job's documents of one kind, as the API lists them. */
const stored = async (kind) => (await api.get(`${jobPath()}/${kind}`)).body;

test('quality: a 6-row certificate entered with the keyboard alone', async () => {
  const quality = region('Quality');
  await quality.getByRole('button', { name: 'New certificate' }).click();
  const form = page.getByRole('form', { name: 'New quality certificate' });
  await form.waitFor();
  assert.equal(await form.getByLabel('Set number').inputValue(), '1');
  await form.getByLabel('Test date (UTC)').fill('2026-12-02T12:00');
  const rows = [
    ['Density at 15 °C', 'ASTM D4052', 'kg/m3', '', '845.2', 'Shore tank 41', false],
    ['Sulphur content', 'ASTM D5453', 'mg/kg', '', '12.4', 'Shore tank 41', true],
    ['Flash point', 'ASTM D93', 'degC', '>', '62', 'Shore tank 41', false],
    ['Water content', 'ASTM D6304', 'mg/kg', '<', '85', 'Shore tank 41', false],
    ['Cloud point', 'ASTM D2500', 'degC', '', '-2', 'Shore tank 42', false],
    ['Kinematic viscosity', 'ASTM D445', 'mm2/s', '', '3.1', 'Shore tank 42', false],
  ];
  // From the first cell on, keys only: type, Tab to the next cell, Enter for the next row.
  await cell(form, 'Test', 1).focus();
  for (const [i, [test, method, unit, operator, result, sample, offSpec]] of rows.entries()) {
    for (const text of [test, method, unit]) {
      await page.keyboard.type(text);
      await page.keyboard.press('Tab');
    }
    if (operator) await page.keyboard.type(operator);
    await page.keyboard.press('Tab');
    await page.keyboard.type(result);
    await page.keyboard.press('Tab');
    await page.keyboard.type(sample);
    await page.keyboard.press('Tab');
    if (offSpec) await page.keyboard.press('Space');
    if (i < rows.length - 1) await page.keyboard.press('Enter');
  }
  assert.equal(await form.locator('tbody tr').count(), 6);
  assert.equal(await cell(form, 'Operator', 3).inputValue(), 'gt');
  assert.equal(await cell(form, 'Off spec', 2).isChecked(), true);
  await shot('23-quality-certificate-keyboard', form);
  await form.getByRole('button', { name: 'Save', exact: true }).click();
  await form.waitFor({ state: 'detached' });

  const results = await stored('quality');
  assert.equal(results.length, 6);
  const byTest = Object.fromEntries(results.map((r) => [r.body.testNumber, r.body]));
  assert.deepEqual(Object.keys(byTest).map(Number).sort(), [1, 2, 3, 4, 5, 6]);
  assert.equal(byTest[2].test.name, 'Sulphur content');
  assert.equal(byTest[2].result, '12.4');
  assert.equal(byTest[2].isOffSpec, true);
  assert.equal(byTest[3].resultOperator, 'gt');
  assert.equal(byTest[4].resultOperator, 'lt');
  assert.equal(byTest[1].sample.location, 'Shore tank 41');
  assert.equal(byTest[1].date, '2026-12-02T12:00:00.000Z');
  assert.ok(results.every((r) => r.body.setNumber === 1 && r.body.status === 'confirmed'));

  const table = page.getByRole('table', { name: 'Quality results' });
  await table.locator('tbody tr').nth(5).waitFor();
  assert.equal(await table.locator('tbody tr').count(), 6);
  assert.match(await table.locator('tbody tr.offspec').innerText(), /Sulphur content[\s\S]*12.4 mg\/kg[\s\S]*OFF SPEC/);
  await quality.getByText('1 result is off specification.').waitFor();
});

test('quality: a certificate pasted from a spreadsheet; the API refuses one row, on its field', async () => {
  const quality = region('Quality');
  await quality.getByRole('button', { name: 'New certificate' }).click();
  const form = page.getByRole('form', { name: 'New quality certificate' });
  await form.waitFor();
  assert.equal(await form.getByLabel('Set number').inputValue(), '2');
  await form.getByLabel('Status').selectOption('preliminary');
  const sheet = [
    ['Density at 15 °C', 'ASTM D4052', 'kg/m3', '=', '845.6', 'Vessel composite'],
    ['Sulphur content', 'ASTM D5453', 'mg/kg', '≤', '9.8', 'Vessel composite'],
    ['Flash point', 'ASTM D93', 'degC', '>', '', 'Vessel composite'],
    ['Ash content', 'ASTM D482', '% m/m', '<', '0.001', 'Vessel composite'],
  ];
  // A block copied from a spreadsheet: tab-separated cells, CRLF rows.
  await cell(form, 'Test', 1).focus();
  await page.evaluate((text) => {
    const data = new DataTransfer();
    data.setData('text/plain', text);
    document.activeElement.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, `${sheet.map((row) => row.join('\t')).join('\r\n')}\r\n`);
  assert.equal(await form.locator('tbody tr').count(), 4);
  assert.equal(await cell(form, 'Method', 4).inputValue(), 'ASTM D482');
  assert.equal(await cell(form, 'Operator', 2).inputValue(), 'lte');
  assert.equal(await cell(form, 'Sample', 3).inputValue(), 'Vessel composite');

  await form.getByRole('button', { name: 'Save', exact: true }).click();
  // Row 3 has no result: the API refuses it; the other rows are saved.
  const result3 = cell(form, 'Result', 3);
  await form.locator('[name="rows[2].result"][aria-invalid="true"]').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.name), 'rows[2].result');
  assert.match(await form.locator('tbody tr').nth(2).locator('.row-status').innerText(), /result/);
  assert.match(await form.getByRole('alert').innerText(), /3 rows saved; 1 refused[\s\S]*Row 3: .*result/);
  for (const n of [0, 1, 3]) assert.equal(await form.locator('tbody tr').nth(n).locator('.row-status').innerText(), 'Saved');
  assert.equal((await stored('quality')).filter((r) => r.body.setNumber === 2).length, 3);
  // The catalog records row 4 added are known now, so its cells need no note;
  // a name the catalog does not hold still says that it will be added.
  assert.equal(await form.locator('tbody tr').nth(3).locator('.catalog-note').count(), 0);
  await cell(form, 'Test', 3).fill('den15');
  assert.equal(await form.locator('tbody tr').nth(2).locator('.catalog-note').first().innerText(), 'New: adds “den15” to the tests');
  await cell(form, 'Test', 3).fill('Flash point');
  await shot('24-quality-certificate-refused', form);

  // Mended and saved again: only that row is sent.
  const sent = [];
  const watch = (request) => request.method() !== 'GET' && sent.push(`${request.method()} ${new URL(request.url()).pathname.split('/').at(-1)}`);
  page.on('request', watch);
  await result3.fill('61.5');
  await form.getByRole('button', { name: 'Save', exact: true }).click();
  await form.waitFor({ state: 'detached' });
  page.off('request', watch);
  assert.deepEqual(sent, ['POST quality']);
  const set2 = (await stored('quality')).filter((r) => r.body.setNumber === 2).sort((a, b) => a.body.testNumber - b.body.testNumber);
  assert.deepEqual(set2.map((r) => [r.body.testNumber, r.body.test.name, r.body.resultOperator, r.body.result, r.body.status]), [
    [1, 'Density at 15 °C', 'eq', '845.6', 'preliminary'],
    [2, 'Sulphur content', 'lte', '9.8', 'preliminary'],
    [3, 'Flash point', 'gt', '61.5', 'preliminary'],
    [4, 'Ash content', 'lt', '0.001', 'preliminary'],
  ]);
  await page.getByRole('table', { name: 'Quality results' }).locator('tbody tr').nth(9).waitFor();
});

test('load port information and both quantity sides, with measurement grids', async () => {
  const lpi = region('Load port information');
  await lpi.getByRole('button', { name: 'Add load port information' }).click();
  const form = page.getByRole('form', { name: 'New load port information' });
  await form.getByLabel('Bill of lading date (UTC)').fill('2026-11-24T16:00');
  await form.getByLabel('Port of loading').fill('Primorsk');
  const measure = async (root, rows) => {
    for (const [i, [code, name, value, unit]] of rows.entries()) {
      await cell(root, 'Code', i + 1).fill(code);
      await cell(root, 'Name', i + 1).fill(name);
      await cell(root, 'Value', i + 1).fill(value);
      await cell(root, 'Unit', i + 1).fill(unit);
      if (i < rows.length - 1) await cell(root, 'Unit', i + 1).press('Enter');
    }
  };
  await measure(form, [['GSV', 'Gross standard volume', '5,921.4', 'm3'], ['MASS', 'Mass in air', '4998.7', 'MT']]);
  await shot('25-load-port-information-form', form);
  await form.getByRole('button', { name: 'Save load port information' }).click();
  await form.waitFor({ state: 'detached' });
  await lpi.getByRole('table').waitFor();
  assert.match(await lpi.innerText(), /Port of loading\s+Primorsk/i);
  assert.match(await lpi.getByRole('table').innerText(), /GSV\s+Gross standard volume\s+5,921.4\s+m3/);
  const [lpiDoc] = await stored('load-port-information');
  assert.deepEqual(lpiDoc.body.measurements.map((m) => [m.code, m.value]), [['GSV', 5921.4], ['MASS', 4998.7]]);

  // Quantity: the source and destination forms side by side.
  const quantity = region('Quantity');
  await quantity.getByRole('button', { name: 'Record quantity' }).click();
  const source = page.getByRole('form', { name: 'Source quantity' });
  const destination = page.getByRole('form', { name: 'Destination quantity' });
  await source.waitFor();
  await destination.waitFor();
  for (const [side, date, gsv, mass, temp] of [
    [source, '2026-12-01T11:30', '5919.8', '4997.2', '18.5'],
    [destination, '2026-12-02T06:15', '5911.3', '4990.1', '16'],
  ]) {
    await side.getByLabel('Date (UTC)').fill(date);
    await side.getByLabel('Water %', { exact: true }).fill('0.05');
    await side.getByLabel('Mean temperature', { exact: true }).fill(temp);
    await side.getByLabel('Temperature unit').fill('degC');
    await side.getByLabel('VCF table').fill('ASTM 54B');
    await measure(side, [['GSV', 'Gross standard volume', gsv, 'm3'], ['MASS', 'Mass in air', mass, 'MT']]);
  }
  await destination.getByLabel('Active shore tank').selectOption('true');
  await shot('26-quantity-form');
  // The source is saved; the destination, not saved yet, comes back as it was.
  await source.getByRole('button', { name: 'Save quantity result' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved source quantity.' }).waitFor();
  await destination.getByLabel('Mean temperature', { exact: true }).waitFor();
  assert.equal(await destination.getByLabel('Mean temperature', { exact: true }).inputValue(), '16');
  assert.equal(await cell(destination, 'Value', 2).inputValue(), '4990.1');
  await destination.getByRole('button', { name: 'Save quantity result' }).click();
  await destination.waitFor({ state: 'detached' });

  const comparison = page.getByRole('table', { name: 'Quantity: source and destination' });
  await comparison.locator('tr', { hasText: 'Gross standard volume' }).filter({ hasText: '5,911.3 m3' }).waitFor();
  assert.match(await comparison.locator('tr', { hasText: 'Gross standard volume' }).innerText(), /5,919.8 m3\s+5,911.3 m3\s+-8.5 \(-0.14 %\)/);
  assert.match(await comparison.locator('tr', { hasText: 'Mean temperature' }).innerText(), /18.5 degC\s+16 degC/);
  const sides = await stored('quantity');
  assert.deepEqual(sides.map((d) => d.body.direction).sort(), ['destination', 'source']);
  assert.equal(sides.find((d) => d.body.direction === 'destination').body.activeShoreTank, true);
});

test('time log: add events and delays, edit one, delete one; the timeline follows', async () => {
  const timelog = region('Time log');
  await timelog.getByRole('button', { name: 'Edit time log' }).click();
  const form = page.getByRole('form', { name: 'Time log' });
  const entries = [
    ['Vessel arrived', 'event', '2026-12-01T08:40', '', ''],
    ['Hoses connected', 'event', '2026-12-01T10:10', '2026-12-01T10:55', ''],
    ['Discharge', 'event', '2026-12-01T11:30', '2026-12-02T04:20', ''],
    ['Waiting for shore tank', 'delay', '2026-12-01T17:05', '2026-12-01T19:35', 'Shore tank 42 not ready'],
    ['Pilot on board', 'event', '2026-12-01T08:00', '', ''],
  ];
  for (const [i, [type, category, start, end, notes]] of entries.entries()) {
    await cell(form, 'Event', i + 1).fill(type);
    await cell(form, 'Category', i + 1).selectOption(category);
    await cell(form, 'Start (UTC)', i + 1).fill(start);
    if (end) await cell(form, 'End (UTC)', i + 1).fill(end);
    await cell(form, 'Notes', i + 1).fill(notes);
    if (i < entries.length - 1) await cell(form, 'Notes', i + 1).press('Enter');
  }
  await shot('27-time-log-form', form);
  await form.getByRole('button', { name: 'Save', exact: true }).click();
  await form.waitFor({ state: 'detached' });
  const list = page.getByRole('list', { name: 'Time log, ordered by start' });
  await list.locator('li').nth(4).waitFor();
  assert.deepEqual(await list.locator('.tl-type').allInnerTexts(), ['Pilot on board', 'Vessel arrived', 'Hoses connected', 'Discharge', 'Waiting for shore tank']);

  // Edit: rows come in time order; the end of the second is changed; the first is deleted.
  await timelog.getByRole('button', { name: 'Edit time log' }).click();
  await form.waitFor();
  assert.equal(await cell(form, 'Event', 1).inputValue(), 'Pilot on board');
  await cell(form, 'End (UTC)', 3).fill('2026-12-01T11:20');
  const confirmed = acceptNextDialog();
  await form.getByRole('button', { name: 'Remove row 1' }).click();
  assert.match(await confirmed, /^Delete the event Pilot on board at 2026-12-01 08:00 UTC\? This cannot be undone\.$/);
  await list.locator('li', { hasText: 'Pilot on board' }).waitFor({ state: 'detached' });
  await form.getByRole('button', { name: 'Save', exact: true }).click();
  await form.waitFor({ state: 'detached' });
  await list.locator('li', { hasText: 'Hoses connected' }).filter({ hasText: '1 h 10 min' }).waitFor();
  assert.deepEqual(await list.locator('.tl-type').allInnerTexts(), ['Vessel arrived', 'Hoses connected', 'Discharge', 'Waiting for shore tank']);
  const log = await stored('timelog');
  assert.equal(log.length, 4);
  assert.equal(log.find((e) => e.body.category === 'delay').body.notes, 'Shore tank 42 not ready');
});

test('drafts: a save cut off by the network is kept; after a reload the draft is offered and restored', async () => {
  const lpi = region('Load port information');
  await lpi.getByRole('button', { name: 'Edit', exact: true }).click();
  const form = page.getByRole('form', { name: 'Edit load port information' });
  await form.waitFor();
  await form.getByLabel('Port of loading').fill('Ust-Luga');
  await cell(form, 'Value', 1).fill('5921.9');

  // The connection is gone: the save fails, says so, and loses nothing.
  const target = `**${jobPath()}/load-port-information/*`;
  await page.route(target, (route) => (route.request().method() === 'PATCH' ? route.abort('internetdisconnected') : route.fallback()));
  await form.getByRole('button', { name: 'Save changes' }).click();
  await form.getByText('Not saved: the server could not be reached').waitFor();
  assert.equal(await form.getByLabel('Port of loading').inputValue(), 'Ust-Luga');
  await page.unroute(target);

  // A reload: the page offers the draft kept in the browser.
  await page.reload();
  await page.getByRole('heading', { name: 'J-2026-900', exact: true }).waitFor();
  const offer = lpi.getByRole('status').filter({ hasText: 'An unsaved draft of edit load port information' });
  await offer.waitFor();
  await shot('28-draft-offer', lpi);
  await offer.getByRole('button', { name: 'Restore draft' }).click();
  await form.waitFor();
  assert.equal(await form.getByLabel('Port of loading').inputValue(), 'Ust-Luga');
  assert.equal(await cell(form, 'Value', 1).inputValue(), '5921.9');
  await form.getByRole('button', { name: 'Save changes' }).click();
  await form.waitFor({ state: 'detached' });
  await lpi.getByText('Ust-Luga').waitFor();
  assert.equal((await stored('load-port-information'))[0].body.measurements[0].value, 5921.9);
  assert.deepEqual(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('quayside.draft'))), []);
});

test('delete: each record after a confirmation naming it; the API refuses what still holds records', async () => {
  // A job with results is not deleted: the API's refusal is shown.
  let confirmed = acceptNextDialog();
  await page.getByRole('button', { name: 'Delete job' }).click();
  assert.equal(await confirmed, 'Delete the job J-2026-900? This cannot be undone.');
  const alert = page.getByRole('alert').filter({ hasText: 'job_not_empty' });
  await alert.waitFor();
  assert.match(await alert.innerText(), /The job J-2026-900 was not deleted/);

  // Load port information, from its form.
  const lpi = region('Load port information');
  await lpi.getByRole('button', { name: 'Edit', exact: true }).click();
  const lpiForm = page.getByRole('form', { name: 'Edit load port information' });
  confirmed = acceptNextDialog();
  await lpiForm.getByRole('button', { name: 'Delete' }).click();
  assert.equal(await confirmed, 'Delete the load port information of Ust-Luga? This cannot be undone.');
  await lpi.getByText('No load port information yet.').waitFor();
  assert.deepEqual(await stored('load-port-information'), []);

  // A quality result, from its certificate.
  await region('Quality').getByRole('button', { name: 'Edit set 2' }).click();
  const form = page.getByRole('form', { name: 'Quality certificate, set 2' });
  confirmed = acceptNextDialog();
  await form.getByRole('button', { name: 'Remove row 4' }).click();
  assert.match(await confirmed, /^Delete the quality result 2\.4 \(Ash content: 0\.001\)\?/);
  await page.getByRole('table', { name: 'Quality results' }).locator('tbody tr', { hasText: 'Ash content' }).waitFor({ state: 'detached' });
  await form.getByRole('button', { name: 'Cancel' }).click();
  assert.equal((await stored('quality')).length, 9);

  // The workspace holds a job: refused. An empty one goes.
  await page.getByRole('link', { name: 'MT Nordic Star, Rotterdam discharge (berth 4)' }).click();
  confirmed = acceptNextDialog();
  await page.getByRole('button', { name: 'Delete workspace' }).click();
  assert.match(await confirmed, /Delete the workspace “MT Nordic Star, Rotterdam discharge \(berth 4\)” with its catalogs\?/);
  await page.getByRole('alert').filter({ hasText: 'Workspace is not empty' }).waitFor();
  const empty = (await api.post('/v2/workspaces', { body: { description: 'Spare workspace', parties: { client: { id: ids.shipper } } } })).body.id;
  await page.goto(`${server.base}/#/workspaces/${empty}`);
  await page.getByRole('heading', { name: 'Spare workspace', level: 1 }).waitFor();
  confirmed = acceptNextDialog();
  await page.getByRole('button', { name: 'Delete workspace' }).click();
  await confirmed;
  await page.getByRole('status').filter({ hasText: 'Deleted the workspace “Spare workspace”' }).waitFor();
  assert.equal((await api.call('GET', `/v2/workspaces/${empty}`)).status, 404);
});

test('the job report prints on A4: facts, quantity, quality with the off-spec mark, time log table, attachments', async () => {
  const form = new FormData();
  form.append('file', new Blob(['ullage'], { type: 'application/pdf' }), 'ullage report.pdf');
  const key = await api.login('admin', ADMIN_PASSWORD);
  const uploaded = await fetch(`${server.base}${jobPath()}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  assert.equal(uploaded.status, 201);
  await page.goto(`${server.base}/#/workspaces/${ids.workspace}/jobs/${ids.job}`);
  await page.getByRole('region', { name: 'Attachments' }).getByText('ullage report.pdf').waitFor();
  await page.locator('[data-testid="live"][data-state="live"]').waitFor();

  await page.emulateMedia({ media: 'print' });
  await shot('29-job-report-print');
  await page.emulateMedia({ media: null });
  const { pages, text } = pdfText(await page.pdf({ preferCSSPageSize: true, printBackground: true }));
  assert.ok(pages.length >= 1);
  for (const p of pages) {
    assert.ok(Math.abs(p.width - 595.3) < 2 && Math.abs(p.height - 841.9) < 2, `not A4: ${p.width} x ${p.height}`);
  }
  const flat = text.replace(/\s+/g, ' ');
  for (const expected of [
    'J-2026-900',
    'Inspection job report',
    'Gasoil 10ppm · 5,000 MT',
    'Gross standard volume (GSV)',
    '-8.5 (-0.14 %)',
    'Sulphur content',
    '1 result is off specification.',
    'OFF SPEC',
    'Waiting for shore tank',
    '2026-12-01 17:05 UTC',
    'ullage report.pdf',
  ]) {
    assert.ok(flat.includes(expected), `the report lacks ${JSON.stringify(expected)}:\n${text}`);
  }
  // The off-spec mark is on the sulphur result's line of the certificate.
  assert.match(flat, /Sulphur content.*?12\.4.*?OFF SPEC/);
  // No buttons, forms or the live mark on paper.
  for (const absent of ['Print report', 'Delete job', 'New certificate', 'Upload', 'Live']) {
    assert.ok(!flat.includes(absent), `the report shows ${JSON.stringify(absent)}`);
  }
});

test('the pages broke no rule: no script errors, no CSP violations, no request off the server', () => {
  assert.deepEqual(browser.pageErrors, []);
  assert.deepEqual(browser.cspViolations, []);
  assert.deepEqual(browser.foreignRequests, []);
});
