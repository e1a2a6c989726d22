// The console's client of the Quayside JSON API: the session key (kept in
// sessionStorage, sent as `Authorization: Bearer KEY`), the contract's error
// body turned into ApiError, a count of requests in flight for the loading
// indicator, and uploads and downloads of job files.

const STORAGE_KEY = 'quayside.session';

/** An answer that is not 2xx, or no answer at all (status 0). */
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.field = field ?? null;
  }
}

// ---------------------------------------------------------------------------
// The session

/** `{key, username}` of the signed-in account, or null. */
export function session() {
  try {
    const value = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null');
    return value && typeof value.key === 'string' && typeof value.username === 'string' ? value : null;
  } catch {
    return null;
  }
}

function keep(value) {
  if (value) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(value));
  else sessionStorage.removeItem(STORAGE_KEY);
}

let unauthorized = () => {};

/** Called with the ApiError when a request made with a key answers 401 (the key is dropped first). */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/** Logs in with the session login; keeps and returns the session. */
export async function signIn(username, password) {
  const data = await request('POST', `/api/rest/1.0/sessions/${encodeURIComponent(username)}`, {
    form: { password },
    anonymous: true,
  });
  const value = { key: data.sessionId, username: data.username ?? username };
  keep(value);
  return value;
}

/** Ends the session on the server (when it is still alive) and forgets the key. */
export async function signOut() {
  const current = session();
  if (!current) return;
  try {
    await request('DELETE', `/api/rest/1.0/sessions/${encodeURIComponent(current.username)}`, {
      quiet401: true,
    });
  } catch (err) {
    // A key the server no longer knows is as signed out as it gets.
    if (err.status !== 401) throw err;
  } finally {
    keep(null);
  }
}

// ---------------------------------------------------------------------------
// Requests in flight

let inFlight = 0;
const busyListeners = new Set();

/** `listener(count)` is called whenever the number of requests in flight changes. */
export function onBusy(listener) {
  busyListeners.add(listener);
}

function busy(delta) {
  inFlight += delta;
  for (const listener of busyListeners) listener(inFlight);
}

// ---------------------------------------------------------------------------
// Requests

/** Turns the contract's error body (or whatever came instead) into an ApiError. */
function errorFrom(status, statusText, text) {
  try {
    const body = JSON.parse(text);
    const e = body?.error;
    if (e && typeof e.message === 'string') {
      const err = new ApiError(e.status ?? status, e.code ?? `http_${status}`, e.message, e.field);
      // 410 cursor_expired: where a change feed goes on from.
      if (e.next !== undefined) err.next = e.next;
      return err;
    }
  } catch {
    // Not JSON: fall through to a plain description.
  }
  const reason = statusText ? ` ${statusText}` : '';
  return new ApiError(status, `http_${status}`, `The server answered ${status}${reason}.`);
}

function networkError(err) {
  return new ApiError(0, 'network', `The server could not be reached (${err?.message ?? err}). Check the connection and try again.`);
}

function authorization() {
  const current = session();
  return current ? { Authorization: `Bearer ${current.key}` } : {};
}

function failed(err, options = {}) {
  if (err.status === 401 && !options.anonymous && session()) {
    keep(null);
    if (!options.quiet401) unauthorized(err);
  }
  return err;
}

/**
 * One JSON API call. Options: `query` (object; empty values are left out),
 * `json` (a body sent as JSON), `form` (a body sent as a form), `anonymous`
 * (no key), `quiet401`. Answers the parsed body; `withTotal` answers
 * `{data, total, capped}` with X-Total-Count (`capped`: the server counted
 * up to its bound and there are more, X-Total-Count-Capped).
 */
export async function request(method, path, options = {}) {
  const headers = { Accept: 'application/json', ...(options.anonymous ? {} : authorization()) };
  let body;
  if (options.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.form) {
    body = new URLSearchParams(options.form);
  }
  let url = path;
  if (options.query) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query)) {
      if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
    }
    const text = params.toString();
    if (text) url += `?${text}`;
  }
  busy(+1);
  try {
    let response;
    try {
      response = await fetch(url, { method, headers, body, cache: 'no-store' });
    } catch (err) {
      throw networkError(err);
    }
    const text = await response.text();
    if (!response.ok) throw failed(errorFrom(response.status, response.statusText, text), options);
    const data = text ? JSON.parse(text) : null;
    if (options.withTotal) {
      const total = Number(response.headers.get('X-Total-Count'));
      const capped = response.headers.get('X-Total-Count-Capped') === 'true';
      return { data, total: Number.isFinite(total) ? total : (data?.length ?? 0), capped };
    }
    return data;
  } finally {
    busy(-1);
  }
}

export const get = (path, query, options = {}) => request('GET', path, { ...options, query });

/**
 * Uploads one file as the multipart part `file`, with XMLHttpRequest so that
 * progress can be shown: `progress(loaded, total)`. Answers the parsed 201 body.
 */
export function upload(path, file, progress = () => {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    const auth = authorization();
    if (auth.Authorization) xhr.setRequestHeader('Authorization', auth.Authorization);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.addEventListener('progress', (event) => {
      progress(event.loaded, event.lengthComputable ? event.total : file.size);
    });
    xhr.addEventListener('load', () => {
      busy(-1);
      if (xhr.status >= 200 && xhr.status < 300) {
        progress(file.size, file.size);
        try {
          resolve(xhr.responseText ? JSON.parse(xhr.responseText) : null);
        } catch (err) {
          reject(new ApiError(xhr.status, 'invalid_answer', `The server's answer could not be read: ${err.message}`));
        }
      } else {
        reject(failed(errorFrom(xhr.status, xhr.statusText, xhr.responseText)));
      }
    });
    xhr.addEventListener('error', () => {
      busy(-1);
      reject(networkError(new Error('the upload was interrupted')));
    });
    xhr.addEventListener('abort', () => {
      busy(-1);
      reject(new ApiError(0, 'aborted', 'The upload was cancelled.'));
    });
    const data = new FormData();
    data.append('file', file, file.name);
    busy(+1);
    xhr.send(data);
  });
}

/**
 * Downloads a file's content with the bearer key and hands it to the browser
 * under `filename`. The bytes are held in memory as a Blob until saved: fine
 * for a console, where files are reports and certificates, not disk images.
 * Answers the number of bytes.
 */
export async function download(path, filename) {
  busy(+1);
  let blob;
  try {
    let response;
    try {
      response = await fetch(path, { headers: authorization(), cache: 'no-store' });
    } catch (err) {
      throw networkError(err);
    }
    if (!response.ok) throw failed(errorFrom(response.status, response.statusText, await response.text()));
    blob = await response.blob();
  } finally {
    busy(-1);
  }
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // Give the browser time to start saving before the URL is let go.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return blob.size;
}

// ---------------------------------------------------------------------------
// The change feed, live: Server-Sent Events read with fetch(), because an
// EventSource cannot send the bearer key.

/**
 * An incremental parser of `text/event-stream` (the format of the HTML
 * standard's "server-sent events"): `feed(chunk)` takes text or bytes as they
 * arrive, split anywhere (inside a line, a CRLF or a UTF-8 sequence), and
 * answers the events completed by it, `{type, data, id}`: `type` is the
 * `event:` field ("message" without one), `data` the `data:` lines joined by
 * "\n", `id` the last `id:` seen so far (it carries over to later events, as
 * the standard says). Comment lines (`: heartbeat`) are skipped; `retry:`
 * sets `retry` (milliseconds). An event not closed by a blank line when the
 * stream ends is dropped.
 */
export class SseParser {
  constructor() {
    this.decoder = new TextDecoder();
    this.buffer = '';
    this.afterCR = false;
    this.data = null;
    this.type = '';
    this.id = '';
    this.retry = null;
  }

  feed(chunk) {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (!text) return [];
    // A CR ended the last chunk: an LF starting this one belongs to it.
    if (this.afterCR && text[0] === '\n') text = text.slice(1);
    this.afterCR = false;
    this.buffer += text;
    const events = [];
    const eol = /\r\n|\r|\n/g;
    let start = 0;
    for (let m = eol.exec(this.buffer); m; m = eol.exec(this.buffer)) {
      if (m[0] === '\r' && m.index === this.buffer.length - 1) this.afterCR = true;
      this.line(this.buffer.slice(start, m.index), events);
      start = m.index + m[0].length;
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  line(line, events) {
    if (line === '') {
      if (this.data !== null) events.push({ type: this.type || 'message', data: this.data, id: this.id });
      this.data = null;
      this.type = '';
      return;
    }
    if (line[0] === ':') return;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (name === 'data') this.data = this.data === null ? value : `${this.data}\n${value}`;
    else if (name === 'event') this.type = value;
    else if (name === 'id' && !value.includes('\0')) this.id = value;
    else if (name === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
  }
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * Follows a change feed of the API (`/v2/workspaces/{id}/changes`) as a live
 * stream, with the session key, until `stop()`.
 *
 * Options: `since` (the cursor to continue from, e.g. the feed's head read
 * before the lists it updates; without it the stream starts at the head),
 * `types` (the server-side filter, e.g. `['qualityResult.*']`),
 * `onChange(change)` for each change in order, `onState(state, error)` when
 * the state changes: `connecting`, `live`, `reconnecting` (with the error that
 * ended the last connection), `stopped`, or `failed` (an answer that retrying
 * cannot mend, such as 404; a 401 also ends the session as any request does),
 * `headers` (instead of the session key's; tests), and
 * `onExpired(next)` for 410 `cursor_expired`: the changes since the cursor are
 * gone, so reload what the changes would have updated, then the stream goes
 * on from the error's `next`.
 *
 * A connection that ends or fails is made again after a pause that doubles
 * from `retryMs` (or the server's `retry:`) up to `maxRetryMs`, sending
 * `Last-Event-ID` of the last change seen; one silent for `idleMs` (the server
 * sends a heartbeat every 15 s) is dropped and made again. `fetch` can be
 * replaced (tests). Answers `{stop(), lastEventId, state}`.
 */
export function follow(path, options = {}) {
  const {
    since = null,
    types = [],
    onChange = () => {},
    onState = () => {},
    onExpired = async () => {},
    retryMs = 1000,
    maxRetryMs = 30_000,
    idleMs = 45_000,
    fetch: fetchImpl = (...args) => fetch(...args),
  } = options;
  const stopping = new AbortController();
  let cursor = since === null || since === undefined ? null : String(since);
  let state = null;
  let serverRetry = null;
  let connected = false;

  const setState = (next, error = null) => {
    if (state === next) return;
    state = next;
    try {
      onState(next, error);
    } catch (err) {
      console.error(err);
    }
  };

  // One connection: resolves when the stream ends, throws what ended it otherwise.
  async function connect() {
    connected = false;
    const connection = new AbortController();
    const stop = () => connection.abort();
    stopping.signal.addEventListener('abort', stop);
    let idle = null;
    const watch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(), idleMs);
    };
    try {
      const query = new URLSearchParams();
      if (types.length) query.set('types', types.join(','));
      if (cursor === null) query.set('since', 'now');
      const headers = { Accept: 'text/event-stream', ...(options.headers ?? authorization()) };
      if (cursor !== null) headers['Last-Event-ID'] = cursor;
      const text = query.toString();
      watch();
      let response;
      try {
        response = await fetchImpl(text ? `${path}?${text}` : path, { headers, cache: 'no-store', signal: connection.signal });
      } catch (err) {
        throw stopping.signal.aborted ? err : networkError(connection.signal.aborted ? new Error('no answer in time') : err);
      }
      if (!response.ok) {
        throw errorFrom(response.status, response.statusText, await response.text().catch(() => ''));
      }
      connected = true;
      setState('live');
      const parser = new SseParser();
      const reader = response.body.getReader();
      for (;;) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (err) {
          throw stopping.signal.aborted ? err : networkError(connection.signal.aborted ? new Error('the stream went silent') : err);
        }
        if (chunk.done) return;
        watch();
        for (const event of parser.feed(chunk.value)) {
          if (event.type === 'error') throw errorFrom(500, '', event.data);
          let change;
          try {
            change = JSON.parse(event.data);
          } catch {
            continue;
          }
          if (event.id) cursor = event.id;
          else if (change?.seq !== undefined) cursor = String(change.seq);
          try {
            onChange(change, event.type);
          } catch (err) {
            console.error(err);
          }
        }
        if (parser.retry !== null) serverRetry = parser.retry;
      }
    } finally {
      clearTimeout(idle);
      stopping.signal.removeEventListener('abort', stop);
      connection.abort();
    }
  }

  async function run() {
    let failures = 0;
    setState('connecting');
    while (!stopping.signal.aborted) {
      let error;
      try {
        await connect();
        error = networkError(new Error('the stream ended'));
      } catch (err) {
        if (stopping.signal.aborted) break;
        error = err instanceof ApiError ? err : networkError(err);
      }
      if (stopping.signal.aborted) break;
      // A connection that was answered starts the pauses over.
      if (connected) failures = 0;
      if (error.code === 'cursor_expired' && error.next !== undefined) {
        try {
          await onExpired(error.next);
          cursor = String(error.next);
          failures = 0;
          continue;
        } catch (err) {
          error = err instanceof ApiError ? err : networkError(err);
        }
      }
      if (error.status === 401) {
        failed(error);
        setState('failed', error);
        return;
      }
      if (error.status >= 400 && error.status < 500 && ![408, 410, 429].includes(error.status)) {
        setState('failed', error);
        return;
      }
      setState('reconnecting', error);
      const base = serverRetry ?? retryMs;
      const delay = Math.min(maxRetryMs, base * 2 ** Math.min(failures, 10));
      failures += 1;
      await sleep(delay * (0.8 + Math.random() * 0.4), stopping.signal);
    }
    setState('stopped');
  }

  const running = run();
  return {
    stop() {
      stopping.abort();
      return running;
    },
    get lastEventId() {
      return cursor;
    },
    get state() {
      return state;
    },
  };
}
