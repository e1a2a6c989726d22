// End-to-end tests of invitations in the console: a workspace that names
// another tenant's organization invites that tenant. Tenant A (anna) creates
// one in the console; tenant B (bert) sees it among its invitations and
// accepts it, declines a second one, and meets the API's refusal on a third
// that a colleague (bea, same tenant) answered meanwhile. The real binary;
// the accounts are made with its command line, as an operator does.
//
// Each tenant has its own page of one browser (the session key is kept per
// tab). The tests of this file share the server and the pages and run in
// order: each continues where the previous one left them.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { launch } from './browser.js';
import { client, startServer } from './server.js';

const PASSWORD = { anna: 'anna-password-1', bert: 'bert-password-1', bea: 'bea-password-1' };
const NORDIC = 'MT Nordic Star, Rotterdam discharge';
const BALTIC = 'MT Baltic Dawn, Antwerp load';
const CORAL = 'MT Coral Sea, Vlissingen load';

let server;
let browser;
let pageA;
let pageB;
let shot;
const apis = {};
const ids = {};

before(async () => {
  server = await startServer();
  server.addUser('anna', PASSWORD.anna);
  server.addUser('bert', PASSWORD.bert);
  server.addUser('bea', PASSWORD.bea, ['--tenant-of', 'bert']);
  for (const name of ['anna', 'bert', 'bea']) {
    apis[name] = client(server.base);
    await apis[name].login(name, PASSWORD[name]);
  }
  ids.shipper = (await apis.anna.post('/v2/organizations', { body: { name: 'Northsea Trading', category: 'shipper' } })).body.id;
  ids.inspector = (await apis.bert.post('/v2/organizations', { body: { name: 'Harbour Inspection BV', category: 'inspector' } })).body.id;
  browser = await launch(server.base);
  pageA = browser.page;
  pageB = await browser.context.newPage();
  browser.watch(pageB);
  shot = browser.shot;
});

after(async () => {
  await browser?.close();
  const result = await server?.stop();
  if (result && result.code !== 0) console.error(`server exit: ${JSON.stringify(result)}\n${server.logText?.() ?? ''}`);
});

/** Tenant A invites: a workspace of Northsea Trading naming Harbour Inspection BV. */
const invite = async (description) => {
  const made = await apis.anna.post('/v2/workspaces', { body: { description, parties: { client: { id: ids.shipper }, vendor: { id: ids.inspector } } } });
  assert.equal(made.body.body.state, 'pending');
  return made.body.id;
};
const accepted = (name) => apis[name].call('POST', `/v2/workspaces/${ids.third}/accept`, undefined, 200);
const signIn = async (page, name) => {
  await page.goto(`${server.base}/#/workspaces`);
  await page.getByLabel('Username').fill(name);
  await page.getByLabel('Password').fill(PASSWORD[name]);
  await page.getByRole('button', { name: 'Sign in' }).click();
};
/** Answers the next dialog of `page` with OK and hands back its message. */
const acceptNextDialog = (page) =>
  new Promise((resolve) => {
    page.once('dialog', async (dialog) => {
      const text = dialog.message();
      await dialog.accept();
      resolve(text);
    });
  });
const invitations = (page) => page.getByRole('region', { name: /^Invitations \(\d+\)$/ });
const invitation = (page, description) => invitations(page).getByRole('listitem').filter({ has: page.getByRole('heading', { name: description, exact: true }) });
const workspaceRow = (page, description) => page.getByRole('table', { name: 'Workspaces' }).locator('tbody tr', { hasText: description });
const focused = (page) => page.evaluate(() => ({ text: document.activeElement?.textContent, item: document.activeElement?.closest('li')?.querySelector('h3')?.textContent ?? null }));

test('tenant A invites tenant B’s organization: the workspace is pending, marked in A’s list', async () => {
  await signIn(pageA, 'anna');
  await pageA.getByText('No workspaces yet.').waitFor();
  await pageA.getByRole('link', { name: 'New workspace' }).click();
  const form = pageA.getByRole('form', { name: 'New workspace' });
  await form.waitFor();
  await form.getByLabel('Description').fill(NORDIC);
  await form.getByLabel('Your organization is').selectOption('client');
  await form.getByLabel('Your organization', { exact: true }).fill('Northsea Trading');
  await form.getByLabel('The other party').fill('Harbour Inspection BV');
  await form.getByLabel('Client reference (xref)').fill('C-77');
  await form.getByRole('button', { name: 'Create workspace' }).click();
  await pageA.getByRole('heading', { name: NORDIC, level: 1 }).waitFor();
  ids.first = decodeURIComponent(new URL(pageA.url()).hash.split('/')[2]);
  const stored = (await apis.anna.get(`/v2/workspaces/${ids.first}`)).body.body;
  assert.equal(stored.state, 'pending');
  assert.deepEqual(stored.parties, { client: { id: ids.shipper, xref: 'C-77' }, vendor: { id: ids.inspector, xref: null } });
  // No job can be recorded before the other party accepts: the page says so and offers none.
  assert.match(await pageA.locator('.details').innerText(), /State\s+invitation pending: jobs can be recorded once the other party accepts/i);
  assert.equal(await pageA.getByRole('link', { name: 'New job' }).count(), 0);

  ids.second = await invite(BALTIC);
  await pageA.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Workspaces' }).click();
  await workspaceRow(pageA, BALTIC).waitFor();
  const rows = await pageA.getByRole('table', { name: 'Workspaces' }).locator('tbody tr').allInnerTexts();
  assert.equal(rows.length, 2);
  for (const row of rows) assert.match(row, /\(invitation pending\)\s+Northsea Trading/);
  // The inviter has no invitation to answer.
  assert.equal(await invitations(pageA).count(), 0);
  await shot('40-invitations-inviter-pending');
});

test('tenant B sees both invitations and accepts one: it joins B’s workspaces, active', async () => {
  await signIn(pageB, 'bert');
  await invitations(pageB).waitFor();
  assert.equal(await invitations(pageB).getByRole('heading', { level: 2 }).innerText(), 'Invitations (2)');
  // Until B answers, the workspaces are not B's.
  assert.equal(await pageB.getByText('No workspaces yet.').count(), 1);
  const items = invitations(pageB).getByRole('listitem');
  assert.equal(await items.count(), 2);
  // Newest first; each says who the parties are, with their references.
  assert.match(await items.nth(0).innerText(), new RegExp(`^${BALTIC}\\s+Client\\s+Northsea Trading\\s+Vendor\\s+Harbour Inspection BV\\s+Received\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d(:\\d\\d)? UTC`, 'i'));
  assert.match(await items.nth(1).innerText(), new RegExp(`^${NORDIC}\\s+Client\\s+Northsea Trading \\(C-77\\)\\s+Vendor\\s+Harbour Inspection BV\\s`, 'i'));
  await browser.shot('41-invitations-received', invitations(pageB));

  await invitation(pageB, NORDIC).getByRole('button', { name: 'Accept' }).click();
  // The lists are read again: the workspace joins B's list, the invitation leaves.
  await workspaceRow(pageB, NORDIC).waitFor();
  await pageB.getByRole('status').filter({ hasText: `You accepted the invitation to “${NORDIC}”` }).waitFor();
  assert.equal(await invitations(pageB).getByRole('heading', { level: 2 }).innerText(), 'Invitations (1)');
  assert.equal(await invitation(pageB, NORDIC).count(), 0);
  const row = await workspaceRow(pageB, NORDIC).innerText();
  assert.match(row, new RegExp(`^${NORDIC}\\s+Northsea Trading \\(C-77\\)\\s+Harbour Inspection BV`));
  assert.doesNotMatch(row, /invitation/);
  // Focus moves on to the next invitation, for the keyboard.
  assert.deepEqual(await focused(pageB), { text: 'Accept', item: BALTIC });
  assert.equal((await apis.bert.get(`/v2/workspaces/${ids.first}`)).body.body.state, 'active');
  assert.equal((await apis.anna.get(`/v2/workspaces/${ids.first}`)).body.body.state, 'active');

  // B can now open it and record jobs in it.
  await workspaceRow(pageB, NORDIC).getByRole('link', { name: NORDIC }).click();
  await pageB.getByRole('heading', { name: NORDIC, level: 1 }).waitFor();
  assert.match(await pageB.locator('.details').innerText(), /State\s+active/i);
  assert.equal(await pageB.getByRole('link', { name: 'New job' }).count(), 1);
  await pageB.goBack();
  await invitations(pageB).waitFor();
});

test('tenant B declines the other by keyboard, after a confirmation naming it: gone from B’s lists, declined to A', async () => {
  await invitation(pageB, BALTIC).getByRole('button', { name: 'Accept' }).focus();
  await pageB.keyboard.press('Tab');
  assert.deepEqual(await focused(pageB), { text: 'Decline', item: BALTIC });
  const dialog = acceptNextDialog(pageB);
  await pageB.keyboard.press('Enter');
  assert.match(await dialog, new RegExp(`^Decline the invitation to the workspace “${BALTIC}”\\? This cannot be undone`));
  await invitations(pageB).waitFor({ state: 'detached' });
  await pageB.getByRole('status').filter({ hasText: `You declined the invitation to “${BALTIC}”.` }).waitFor();
  const rows = await pageB.getByRole('table', { name: 'Workspaces' }).locator('tbody tr').allInnerTexts();
  assert.equal(rows.length, 1);
  assert.match(rows[0], new RegExp(`^${NORDIC}`));
  assert.equal((await apis.bert.call('GET', `/v2/workspaces/${ids.second}`)).status, 404);
  assert.deepEqual((await apis.bert.get('/v2/invitations')).body, []);

  // The inviter's list, read again, marks it declined; the accepted one is no longer marked.
  await pageA.reload();
  await workspaceRow(pageA, BALTIC).filter({ hasText: '(invitation declined)' }).waitFor();
  await workspaceRow(pageA, NORDIC).filter({ hasNotText: '(invitation' }).waitFor();
  await shot('42-invitations-inviter-declined');
  await workspaceRow(pageA, BALTIC).getByRole('link', { name: BALTIC }).click();
  await pageA.getByRole('heading', { name: BALTIC, level: 1 }).waitFor();
  assert.match(await pageA.locator('.details').innerText(), /State\s+invitation declined: the other party refused this workspace/i);
  assert.equal(await pageA.getByRole('link', { name: 'New job' }).count(), 0);
});

test('a refusal is shown on its invitation: declining one a colleague accepted meanwhile is 409 invitation_answered', async () => {
  ids.third = await invite(CORAL);
  await pageB.reload();
  await invitation(pageB, CORAL).waitFor();
  // Bea, of bert's company, accepts it while bert's page still offers it.
  assert.equal((await accepted('bea')).body.body.state, 'active');

  const item = invitation(pageB, CORAL);
  const dialog = acceptNextDialog(pageB);
  await item.getByRole('button', { name: 'Decline' }).click();
  assert.match(await dialog, new RegExp(`“${CORAL}”`));
  const alert = item.getByRole('alert').filter({ hasText: '409 · invitation_answered' });
  await alert.waitFor();
  assert.match(await alert.innerText(), /^The invitation was not declined/);
  assert.deepEqual(await focused(pageB), { text: 'Decline', item: CORAL });
  // The workspaces are read again (it is B's now); the refusal stays where it was.
  await workspaceRow(pageB, CORAL).waitFor();
  assert.equal(await alert.count(), 1);
  assert.doesNotMatch(await workspaceRow(pageB, CORAL).innerText(), /invitation/);
  await browser.shot('43-invitations-refused', invitations(pageB));
  assert.equal((await apis.bert.get(`/v2/workspaces/${ids.third}`)).body.body.state, 'active');
});

test('the pages broke no rule: no script errors, no CSP violations, no request off the server', () => {
  assert.deepEqual(browser.pageErrors, []);
  assert.deepEqual(browser.cspViolations, []);
  assert.deepEqual(browser.foreignRequests, []);
});
