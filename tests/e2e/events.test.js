// The console's change-feed client (console/api.js: SseParser, follow), without
// a browser: the parser on chunks split anywhere, and the stream's reconnects,
// Last-Event-ID, 410 cursor_expired and stop() against a scripted fetch.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SseParser, follow } from '../../console/api.js';

/** Every event of `chunks` fed in order. */
function parse(chunks) {
  const parser = new SseParser();
  return chunks.flatMap((chunk) => parser.feed(chunk));
}

/** Every way of cutting `text` in two, fed as two chunks, gives `expected`. */
function everySplit(text, expected) {
  for (let i = 0; i <= text.length; i += 1) {
    assert.deepEqual(parse([text.slice(0, i), text.slice(i)]), expected, `split at ${i}: ${JSON.stringify(text.slice(0, i))}`);
  }
  assert.deepEqual(parse([...text]), expected, 'one character at a time');
}

test('sse: id, event and data fields; comments and the retry field', () => {
  const stream = 'retry: 2000\n: connected\n\nid: 58\nevent: attachment.created\ndata: {"seq":58}\n\n: heartbeat\n\n';
  everySplit(stream, [{ type: 'attachment.created', data: '{"seq":58}', id: '58' }]);
  const parser = new SseParser();
  parser.feed(stream);
  assert.equal(parser.retry, 2000);
});

test('sse: data over several lines, an event without a type, a field without a value or a space', () => {
  everySplit('data: first\ndata:second\ndata\ndata:  two spaces\n\n', [{ type: 'message', data: 'first\nsecond\n\n two spaces', id: '' }]);
  // A blank line with no data dispatches nothing, and the type does not carry over.
  everySplit('event: lonely\n\ndata: x\n\n', [{ type: 'message', data: 'x', id: '' }]);
  // Unknown fields are ignored; a colon inside the value stays.
  everySplit('foo: bar\ndata: a:b: c\n\n', [{ type: 'message', data: 'a:b: c', id: '' }]);
});

test('sse: the last id carries over to later events; an id with NUL is ignored', () => {
  everySplit('id: 7\ndata: a\n\ndata: b\n\nid: 8\u0000\ndata: c\n\nid\ndata: d\n\n', [
    { type: 'message', data: 'a', id: '7' },
    { type: 'message', data: 'b', id: '7' },
    { type: 'message', data: 'c', id: '7' },
    { type: 'message', data: 'd', id: '' },
  ]);
});

test('sse: CRLF, CR and LF line ends, also a CRLF split between chunks', () => {
  const expected = [
    { type: 'job.updated', data: '1', id: '1' },
    { type: 'job.updated', data: '2\n3', id: '2' },
  ];
  everySplit('id: 1\r\nevent: job.updated\r\ndata: 1\r\n\r\nid: 2\revent: job.updated\rdata: 2\rdata: 3\r\r', expected);
  everySplit('id: 1\nevent: job.updated\ndata: 1\r\n\nid: 2\r\nevent: job.updated\ndata: 2\rdata: 3\n\r\n', expected);
  // "\r" then "\n" in the next chunk is one line end, not a blank line.
  assert.deepEqual(parse(['data: a\r', '\ndata: b\r', '\n\r', '\n']), [{ type: 'message', data: 'a\nb', id: '' }]);
});

test('sse: bytes split inside a UTF-8 sequence; a leading BOM; an unfinished event is dropped', () => {
  const bytes = new TextEncoder().encode('\uFEFFdata: Density at 15 °C → ok\n\ndata: never finished\n');
  for (let i = 0; i <= bytes.length; i += 1) {
    assert.deepEqual(parse([bytes.slice(0, i), bytes.slice(i)]), [{ type: 'message', data: 'Density at 15 °C → ok', id: '' }], `split at byte ${i}`);
  }
});

// ---------------------------------------------------------------------------
// follow(): a scripted fetch

/** A fetch whose answers the test scripts: each call is recorded and waits for `answer`. */
function scriptedFetch() {
  const calls = [];
  const waiting = [];
  const fetch = (url, init) => {
    const call = { url, headers: init.headers, signal: init.signal };
    calls.push(call);
    return new Promise((resolve, reject) => {
      call.respond = resolve;
      init.signal.addEventListener('abort', () => {
        call.aborted = true;
        reject(new DOMException('The operation was aborted.', 'AbortError'));
        call.controller?.error(new DOMException('The operation was aborted.', 'AbortError'));
      });
      waiting.shift()?.(call);
    });
  };
  /** The next call (made now or later). */
  const next = () => {
    const unanswered = calls.find((c) => !c.taken);
    if (unanswered) {
      unanswered.taken = true;
      return Promise.resolve(unanswered);
    }
    return new Promise((resolve) => waiting.push((call) => {
      call.taken = true;
      resolve(call);
    }));
  };
  return { fetch, calls, next };
}

/** Answers a call with an open event stream; answers the stream's controller. */
function openStream(call) {
  let controller;
  const body = new ReadableStream({ start: (c) => (controller = c) });
  call.controller = controller;
  call.respond(new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } }));
  const encoder = new TextEncoder();
  return {
    send: (text) => controller.enqueue(encoder.encode(text)),
    change: (seq, type, record = {}) => controller.enqueue(encoder.encode(`id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ seq, type, record })}\n\n`)),
    close: () => controller.close(),
    fail: () => controller.error(new TypeError('network error')),
  };
}

const errorBody = (status, code, extra = {}) => JSON.stringify({ error: { status, code, message: `${code} happened`, ...extra } });

/** Resolves once `predicate()` holds, polling; fails after two seconds. */
async function until(predicate, what) {
  const deadline = Date.now() + 2000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

test('follow: resumes from `since` with Last-Event-ID and the types filter; changes in order; stop() aborts', async () => {
  const script = scriptedFetch();
  const seen = [];
  const states = [];
  const live = follow('/v2/workspaces/W/changes', {
    since: 41,
    types: ['qualityResult.*', 'job.*'],
    headers: { Authorization: 'Bearer K' },
    fetch: script.fetch,
    onChange: (change) => seen.push(change.seq),
    onState: (state) => states.push(state),
  });
  const call = await script.next();
  assert.equal(call.url, '/v2/workspaces/W/changes?types=qualityResult.*%2Cjob.*');
  assert.equal(call.headers['Last-Event-ID'], '41');
  assert.equal(call.headers.Authorization, 'Bearer K');
  assert.equal(call.headers.Accept, 'text/event-stream');
  const stream = openStream(call);
  stream.send('retry: 2000\n: connected\n\n');
  stream.change(42, 'qualityResult.created');
  stream.send(': heartbeat\n\nid: 43\nevent: job.upd');
  stream.send('ated\ndata: {"seq":43}\n\n');
  await until(() => seen.length === 2, 'two changes');
  assert.deepEqual(seen, [42, 43]);
  assert.equal(live.lastEventId, '43');
  assert.equal(live.state, 'live');

  await live.stop();
  assert.ok(call.signal.aborted, 'the fetch was aborted');
  assert.deepEqual(states, ['connecting', 'live', 'stopped']);
  assert.equal(script.calls.length, 1);
});

test('follow: without `since` it starts at the head; a dropped stream is resumed from the last change seen', async () => {
  const script = scriptedFetch();
  const seen = [];
  const states = [];
  const live = follow('/feed', { fetch: script.fetch, headers: {}, retryMs: 5, onChange: (c) => seen.push(c.seq), onState: (s) => states.push(s) });
  const first = await script.next();
  assert.equal(first.url, '/feed?since=now');
  assert.equal(first.headers['Last-Event-ID'], undefined);
  let stream = openStream(first);
  stream.change(7, 'timelog.created');
  await until(() => seen.length === 1, 'the first change');
  stream.fail();

  const second = await script.next();
  assert.equal(second.url, '/feed');
  assert.equal(second.headers['Last-Event-ID'], '7');
  stream = openStream(second);
  stream.change(8, 'timelog.deleted');
  await until(() => seen.length === 2, 'the change after the reconnect');
  // The server ending the stream (shutdown, session ended) is also reconnected.
  stream.close();
  const third = await script.next();
  assert.equal(third.headers['Last-Event-ID'], '8');
  third.respond(new Response(errorBody(503, 'shutting_down'), { status: 503 }));
  const fourth = await script.next();
  assert.equal(fourth.headers['Last-Event-ID'], '8');
  openStream(fourth);
  await until(() => live.state === 'live', 'live again');
  await live.stop();
  assert.deepEqual(seen, [7, 8]);
  assert.deepEqual(states, ['connecting', 'live', 'reconnecting', 'live', 'reconnecting', 'live', 'stopped']);
});

test('follow: 410 cursor_expired reloads, then goes on from the error\'s next', async () => {
  const script = scriptedFetch();
  const expired = [];
  const live = follow('/feed', {
    since: 3,
    fetch: script.fetch,
    headers: {},
    retryMs: 5,
    onExpired: async (next) => {
      expired.push(next);
    },
  });
  const first = await script.next();
  first.respond(new Response(errorBody(410, 'cursor_expired', { next: 120 }), { status: 410 }));
  const second = await script.next();
  assert.deepEqual(expired, [120]);
  assert.equal(second.headers['Last-Event-ID'], '120');
  // The same error in the stream itself (retention overtook a stream far behind).
  const stream = openStream(second);
  stream.send(`event: error\ndata: ${errorBody(410, 'cursor_expired', { next: 300 })}\n\n`);
  const third = await script.next();
  assert.deepEqual(expired, [120, 300]);
  assert.equal(third.headers['Last-Event-ID'], '300');
  openStream(third);
  await live.stop();
});

test('follow: an answer retrying cannot mend (404) ends it as failed; a silent stream is dropped and made again', async () => {
  let script = scriptedFetch();
  let failure;
  const gone = follow('/feed', { fetch: script.fetch, headers: {}, retryMs: 5, onState: (s, err) => s === 'failed' && (failure = err) });
  (await script.next()).respond(new Response(errorBody(404, 'not_found'), { status: 404 }));
  await until(() => gone.state === 'failed', 'failed');
  assert.equal(failure.status, 404);
  assert.equal(failure.code, 'not_found');
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(script.calls.length, 1, 'no retry after a 404');

  script = scriptedFetch();
  const silent = follow('/feed', { fetch: script.fetch, headers: {}, retryMs: 5, idleMs: 50 });
  const first = await script.next();
  openStream(first).change(1, 'job.updated');
  const second = await script.next();
  assert.ok(first.signal.aborted, 'the silent connection was dropped');
  assert.equal(second.headers['Last-Event-ID'], '1');
  openStream(second);
  await silent.stop();
});
