// Starts the real quayside binary on 127.0.0.1:0 with a fresh data file, and a
// small JSON client to seed it through the HTTP API.

import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export const ADMIN_PASSWORD = 'admin-password-1';

/** The binary under test: $QUAYSIDE_BIN, else the debug build of this checkout. */
export function binary() {
  return process.env.QUAYSIDE_BIN ?? path.resolve(here, '../../target/debug/quayside');
}

/**
 * Starts `quayside serve` on a fresh data file in a temporary directory.
 * `args`: more options of `serve` (e.g. `['--serve-active-content']`).
 * Answers `{base, dir, log, logText(), addUser(name, password, extra), stop()}`.
 */
export async function startServer(args = []) {
  const bin = binary();
  if (!fs.existsSync(bin)) throw new Error(`no quayside binary at ${bin}; build it with cargo build or set QUAYSIDE_BIN`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quayside-e2e-'));
  const log = path.join(dir, 'server.log');
  const logFd = fs.openSync(log, 'a');
  const data = path.join(dir, 'e2e.db');
  const child = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--data', data, ...args], {
    env: { ...process.env, QUAYSIDE_ADMIN_PASSWORD: ADMIN_PASSWORD, QUAYSIDE_PBKDF2_ITERATIONS: '1000' },
    stdio: ['ignore', 'pipe', logFd],
  });
  fs.closeSync(logFd);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const base = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error(`quayside did not start in 30 s; log:\n${fs.readFileSync(log, 'utf8')}`)), 30_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      const match = /^quayside listening on (http:\/\/\S+)$/.exec(line.trim());
      if (match) resolve(match[1]);
      else reject(new Error(`unexpected first line ${JSON.stringify(line)}; log:\n${fs.readFileSync(log, 'utf8')}`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`quayside exited (${code}) before listening; log:\n${fs.readFileSync(log, 'utf8')}`));
    });
  });
  return {
    base,
    dir,
    log,
    logText: () => fs.readFileSync(log, 'utf8'),
    /**
     * Adds an account with the command line, as an operator does while the
     * server runs: a new tenant, or with `--tenant-of NAME` a colleague of NAME.
     */
    addUser(name, password, extra = []) {
      const env = { ...process.env, QUAYSIDE_PBKDF2_ITERATIONS: '1000' };
      delete env.QUAYSIDE_PASSWORD;
      delete env.QUAYSIDE_DATA;
      return execFileSync(bin, ['user', 'add', name, ...extra, '--data', data], { env, input: `${password}\n`, encoding: 'utf8' });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const result = await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
      return result;
    },
  };
}

/** A JSON client of the API for seeding: `call(method, path, body)` answers `{status, headers, body}`. */
export function client(base) {
  let key = null;
  async function call(method, pathname, body, expected) {
    const headers = {};
    if (key) headers.Authorization = `Bearer ${key}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(base + pathname, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const parsed = text ? JSON.parse(text) : null;
    if (expected !== undefined && response.status !== expected) {
      throw new Error(`${method} ${pathname}: expected ${expected}, got ${response.status}: ${text}`);
    }
    return { status: response.status, headers: response.headers, body: parsed };
  }
  return {
    call,
    async login(username, password) {
      const response = await fetch(`${base}/api/rest/1.0/sessions/${username}`, {
        method: 'POST',
        body: new URLSearchParams({ password }),
      });
      if (response.status !== 200) throw new Error(`login failed: ${response.status} ${await response.text()}`);
      key = (await response.json()).sessionId;
      return key;
    },
    put: (p, b) => call('PUT', p, b),
    post: (p, b) => call('POST', p, b, 201),
    patch: (p, b) => call('PATCH', p, b, 200),
    get: (p) => call('GET', p, undefined, 200),
  };
}

/**
 * A TCP proxy to the server at `base` on another port of 127.0.0.1, to cut
 * connections as a network failure would: `drop()` resets every connection
 * through it, `refuse(true)` resets new ones as they come until
 * `refuse(false)`. Answers `{base, drop, refuse, close}`.
 */
export async function startProxy(base) {
  const target = new URL(base);
  const sockets = new Set();
  let refusing = false;
  const server = net.createServer((incoming) => {
    if (refusing) {
      incoming.resetAndDestroy();
      return;
    }
    const outgoing = net.connect(Number(target.port), target.hostname);
    const pair = [incoming, outgoing];
    for (const socket of pair) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        for (const other of pair) other.destroy();
      });
    }
    incoming.pipe(outgoing);
    outgoing.pipe(incoming);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const drop = () => {
    for (const socket of sockets) socket.resetAndDestroy();
  };
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    drop,
    refuse(on) {
      refusing = on;
    },
    close() {
      drop();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
