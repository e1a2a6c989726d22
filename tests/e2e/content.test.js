// End-to-end tests of uploaded active content (issue 15, decision 29): an
// HTML page and an SVG whose scripts would leave a trace on the console's
// origin are uploaded through the API, then opened in headless Chromium from
// that origin as a signed-in user would (the console's Download button, and a
// direct navigation to `/content?api_key=`). Nothing of them may run: no title
// change, no localStorage entry, no request, no record made with the key.
//
// Two servers: the default one (active types served as
// application/octet-stream) and one with `--serve-active-content` (types kept;
// the CSP sandbox alone keeps the scripts out). The tests run in order and
// share the servers and the browser.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import { launch } from './browser.js';
import { ADMIN_PASSWORD, client, startServer } from './server.js';
import { seed } from './seed.js';

const CONTENT_CSP = "sandbox; default-src 'none'";
const MARK = 'quayside.uploaded-script-ran';
const PLANTED = 'Planted by an upload';

// Each script, were it to run with the console's origin, would change the
// title, write to localStorage, request /trace/... and create an organization
// with the session key the console keeps in sessionStorage.
const SCRIPT = (from) => `
  document.title = 'uploaded script ran';
  document.documentElement.setAttribute('data-ran', '${from}');
  try { localStorage.setItem('${MARK}', '${from}'); } catch (e) {}
  fetch('/trace/${from}-fetch');
  try {
    const session = JSON.parse(sessionStorage.getItem('quayside.session'));
    fetch('/v2/organizations', { method: 'POST', headers: { Authorization: 'Bearer ' + session.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ body: { name: '${PLANTED}', category: 'shipper' } }) });
  } catch (e) {}
`;

const HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>uploaded page</title></head>
<body><h1>An uploaded page</h1><img src="/trace/html-img" alt="">
<script>${SCRIPT('html')}</script>
</body></html>
`;

const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40" onload="${SCRIPT('svg-onload').replaceAll("'", '&apos;').replaceAll('"', '&quot;')}">
<title>uploaded drawing</title><text x="4" y="24">An uploaded drawing</text>
<script>${SCRIPT('svg-script')}</script>
</svg>
`;

const FILES = [
  { name: 'planted.html', type: 'text/html', text: HTML },
  { name: 'planted.svg', type: 'image/svg+xml', text: SVG },
];

let browser;
let context;
const traces = [];
const setups = {};

/** A server (with `args`), seeded, with both files uploaded; a console page signed in to it. */
async function setUp(args) {
  const server = await startServer(args);
  const api = client(server.base);
  const key = await api.login('admin', ADMIN_PASSWORD);
  const ids = await seed(api);
  const jobPath = `/workspaces/${ids.workspace}/jobs/${ids.job}`;
  const files = {};
  for (const { name, type, text } of FILES) {
    const form = new FormData();
    form.append('file', new Blob([text], { type }), name);
    const uploaded = await fetch(`${server.base}${jobPath}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
    assert.equal(uploaded.status, 201, await uploaded.clone().text());
    const file = await uploaded.json();
    assert.equal(file.body.format, type);
    files[name] = `${jobPath}/files/${file.id}/content`;
  }

  const page = await context.newPage();
  await page.goto(`${server.base}/`);
  await page.waitForURL(/#\/signin/);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction(() => sessionStorage.getItem('quayside.session') !== null);
  await page.goto(`${server.base}/#/workspaces/${ids.workspace}/jobs/${ids.job}`);
  const attachments = page.getByRole('region', { name: 'Attachments' });
  for (const { name } of FILES) await attachments.locator('tbody tr', { hasText: name }).waitFor();
  const consoleKey = await page.evaluate(() => JSON.parse(sessionStorage.getItem('quayside.session')).key);
  return { server, api, page, attachments, files, key: consoleKey, title: await page.title() };
}

/** Asserts that no script of the uploads touched the console at `setup`'s origin. */
async function assertNoTrace({ api, page, title }) {
  assert.equal(await page.title(), title);
  assert.equal(await page.evaluate((mark) => localStorage.getItem(mark), MARK), null);
  assert.equal(await page.evaluate(() => document.documentElement.getAttribute('data-ran')), null);
  assert.deepEqual(traces, []);
  const organizations = await api.call('GET', '/v2/organizations', undefined, 200);
  assert.ok(!JSON.stringify(organizations.body).includes(PLANTED), 'an uploaded script created an organization');
  assert.equal(context.pages().filter((p) => !p.isClosed()).length, Object.keys(setups).length, 'a page was opened');
}

/** The headers of `url` as fetched by the console page (its origin), for GET and HEAD. */
async function headersFromConsole(page, url) {
  return page.evaluate(async (u) => {
    const answers = {};
    for (const method of ['GET', 'HEAD']) {
      const response = await fetch(u, { method, cache: 'no-store' });
      answers[method] = { status: response.status, headers: Object.fromEntries(response.headers) };
    }
    return answers;
  }, url);
}

/**
 * Opens `url` in a new tab as a user following a link would, and answers how
 * it ended: `{download}` (the tab stayed blank) or `{tab}` (a document loaded).
 * `inline`: the answer's Content-Disposition is dropped on the way, as if the
 * browser ignored it, to see what the type and the CSP alone do.
 */
async function open(url, inline = false) {
  const tab = await context.newPage();
  if (inline) {
    await tab.route(url, async (route) => {
      const response = await route.fetch();
      const headers = { ...response.headers() };
      assert.match(headers['content-disposition'], /^attachment;/);
      delete headers['content-disposition'];
      await route.fulfill({ response, headers });
    });
  }
  const downloaded = tab.waitForEvent('download');
  downloaded.catch(() => {}); // a document loaded instead: the tab is closed by the caller
  const loaded = await tab.goto(url).then((response) => ({ response }), (error) => ({ error }));
  if (loaded.error) {
    assert.match(loaded.error.message, /Download is starting/);
    const download = await downloaded;
    assert.equal(tab.url(), 'about:blank', 'the download left a document in the tab');
    await tab.close();
    return { download };
  }
  return { tab, response: loaded.response };
}

async function savedText(download) {
  return fs.readFileSync(await download.path(), 'utf8');
}

before(async () => {
  browser = await launch('http://127.0.0.1');
  ({ context } = browser);
  // A request of theirs that got an answer (one blocked by a CSP is reported
  // by Chromium as attempted and failed, and reaches no server).
  context.on('response', (response) => {
    const request = response.request();
    if (new URL(request.url()).pathname.startsWith('/trace/') || (request.method() === 'POST' && request.url().includes('/v2/organizations'))) {
      traces.push(`${request.method()} ${request.url()} ${response.status()}`);
    }
  });
  await browser.page.close();
  setups.inert = await setUp([]);
});

after(async () => {
  await browser?.close();
  for (const setup of Object.values(setups)) {
    const result = await setup.server.stop();
    if (result.code !== 0) console.error(`server exit: ${JSON.stringify(result)}\n${setup.server.logText()}`);
  }
});

test('active uploads are served as inert octet-streams with nosniff and the sandbox CSP, to the console origin', async () => {
  const { page, files, key } = setups.inert;
  for (const { name } of FILES) {
    const answers = await headersFromConsole(page, `${files[name]}?api_key=${encodeURIComponent(key)}`);
    for (const method of ['GET', 'HEAD']) {
      const { status, headers } = answers[method];
      assert.equal(status, 200, `${method} ${name}`);
      assert.equal(headers['content-type'], 'application/octet-stream', `${method} ${name}`);
      assert.equal(headers['x-content-type-options'], 'nosniff', `${method} ${name}`);
      assert.equal(headers['content-security-policy'], CONTENT_CSP, `${method} ${name}`);
      assert.match(headers['content-disposition'], new RegExp(`^attachment; filename="${name.replace('.', '\\.')}"`), `${method} ${name}`);
    }
  }
  await assertNoTrace(setups.inert);
});

test("the console's Download button saves the uploads and runs nothing of them", async () => {
  const { page, attachments } = setups.inert;
  for (const { name, type, text } of FILES) {
    const row = attachments.locator('tbody tr', { hasText: name });
    assert.match(await row.innerText(), new RegExp(`${name.replace('.', '\\.')}\\s+${type.replace('+', '\\+')}`));
    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Download' }).click()]);
    assert.equal(download.suggestedFilename(), name);
    assert.equal(await savedText(download), text);
    await attachments.getByText(`Downloaded ${name} (`).waitFor();
    await assertNoTrace(setups.inert);
  }
});

test('a direct navigation to /content?api_key= from the console origin becomes a download, also without Content-Disposition', async () => {
  const { server, files, key } = setups.inert;
  for (const { name, text } of FILES) {
    const url = `${server.base}${files[name]}?api_key=${encodeURIComponent(key)}`;
    for (const inline of [false, true]) {
      const opened = await open(url, inline);
      assert.ok(opened.download, `${name} (inline: ${inline}) was rendered as a document, not downloaded`);
      assert.equal(await savedText(opened.download), text);
      await assertNoTrace(setups.inert);
    }
  }
});

test('with --serve-active-content the type is kept, and the sandbox CSP still keeps the scripts from the console origin', async () => {
  setups.active = await setUp(['--serve-active-content']);
  const { server, page, files, key } = setups.active;
  for (const { name, type } of FILES) {
    const answers = await headersFromConsole(page, `${files[name]}?api_key=${encodeURIComponent(key)}`);
    for (const method of ['GET', 'HEAD']) {
      const { headers } = answers[method];
      assert.equal(headers['content-type'], type, `${method} ${name}`);
      assert.equal(headers['x-content-type-options'], 'nosniff', `${method} ${name}`);
      assert.equal(headers['content-security-policy'], CONTENT_CSP, `${method} ${name}`);
      assert.match(headers['content-disposition'], /^attachment;/, `${method} ${name}`);
    }
  }

  for (const { name, text } of FILES) {
    const url = `${server.base}${files[name]}?api_key=${encodeURIComponent(key)}`;
    // As served, Content-Disposition still makes it a download.
    const saved = await open(url);
    assert.ok(saved.download, `${name} was rendered as a document, not downloaded`);
    assert.equal(await savedText(saved.download), text);
    await assertNoTrace(setups.active);

    // Rendered anyway (Content-Disposition dropped): a document of no origin
    // whose scripts do not run.
    const imageBlocked = name.endsWith('.html') ? context.waitForEvent('requestfailed', (r) => r.url().endsWith('/trace/html-img')) : null;
    const { tab, response } = await open(url, true);
    assert.equal(response.status(), 200);
    assert.equal(response.headers()['content-security-policy'], CONTENT_CSP);
    if (name.endsWith('.html')) {
      await tab.getByRole('heading', { name: 'An uploaded page' }).waitFor();
      assert.equal(await tab.title(), 'uploaded page');
      // Markup loads nothing either: the image was refused by default-src 'none'.
      assert.equal((await imageBlocked).failure().errorText, 'csp');
    } else {
      await tab.getByText('An uploaded drawing').waitFor();
      assert.equal(await tab.evaluate(() => document.documentElement.localName), 'svg');
    }
    assert.equal(await tab.evaluate(() => document.documentElement.getAttribute('data-ran')), null);
    assert.equal(await tab.evaluate(() => self.origin), 'null');
    assert.equal(await tab.evaluate(() => { try { return `readable (${localStorage.length})`; } catch (e) { return e.name; } }), 'SecurityError');
    await tab.close();
    await assertNoTrace(setups.active);
  }
});
