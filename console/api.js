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
      return new ApiError(e.status ?? status, e.code ?? `http_${status}`, e.message, e.field);
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
 * `{data, total}` with X-Total-Count.
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
      return { data, total: Number.isFinite(total) ? total : (data?.length ?? 0) };
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
