/**
 * Jobs travel to their threads as bytes: each message to a thread carries
 * one ArrayBuffer of JSON that it moves (detached on the sending side, so
 * no job was copied by a structured clone), a claimed job's record bytes go
 * in as they are, and the thread's job has Job.toJSON()'s fields.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MessagePort } from 'node:worker_threads';
import type { JobJson } from '@zkq/core';
import { Piscina } from 'piscina';
import { ThreadPool } from '../../packages/worker/src/sandbox/pool.ts';
import { decodeTasks, encodeTasks, jobJson } from '../../packages/worker/src/sandbox/protocol.ts';

const PROCESSOR = fileURLToPath(new URL('../fixtures/processors/describe-job.mjs', import.meta.url));
const never = new AbortController().signal;
const ignore = () => undefined;

function job(id: string, data: unknown): JobJson {
  return {
    id,
    name: 'j',
    data,
    opts: { attempts: 2 },
    progress: 0,
    attemptsMade: 0,
    attemptsStarted: 1,
    stalledCounter: 0,
    timestamp: 1,
    delay: 0,
    priority: 0,
    stacktrace: [],
  };
}

/** A stored record's bytes: JobJson's fields and the record's own (state, lane...). */
function recordBytes(id: string, data: unknown): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...job(id, data), state: 'active', lane: 'p-0000000000', n: 'x' }));
}

test('a batch of record bytes and jobs decodes to their tasks, the records without their own fields', () => {
  const text = '🎉 e\u0301 \u2028 \ud800 "q" \\';
  const record = recordBytes('r', { text });
  const tasks = decodeTasks(
    encodeTasks([
      { key: '1', token: '7', job: record },
      { key: '2', token: '8', job: job('j', { nested: { list: [1, { text }] } }) },
    ]),
  );
  assert.deepEqual(
    tasks.map((t) => [t.key, t.token]),
    [
      ['1', '7'],
      ['2', '8'],
    ],
  );
  assert.deepEqual(jobJson(tasks[0]?.job as JobJson), {
    ...job('r', { text }),
    processedOn: undefined,
    finishedOn: undefined,
    returnvalue: undefined,
    failedReason: undefined,
    processedBy: undefined,
  });
  assert.deepEqual((tasks[1] as { job: JobJson }).job.data, { nested: { list: [1, { text }] } });
  // a record's bytes are copied, never moved: they may share their buffer with others
  assert.equal(
    record.toString('utf8'),
    JSON.stringify({ v: 1, ...job('r', { text }), state: 'active', lane: 'p-0000000000', n: 'x' }),
  );
  assert.deepEqual(decodeTasks(encodeTasks([])), []);
});

test('a shared thread gets its jobs as one ArrayBuffer per message, moved (detached here once sent)', async (t) => {
  const sent: unknown[] = [];
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (this: MessagePort, m: unknown, transfer?: never) {
    sent.push(m);
    return post.call(this, m, transfer);
  };
  t.after(() => {
    MessagePort.prototype.postMessage = post;
  });
  const pool = new ThreadPool(PROCESSOR, { concurrency: 4, threads: 1 });
  t.after(() => pool.close());
  const record = recordBytes('a', { text: 'ü'.repeat(1000) });
  const results = (await Promise.all([
    pool.run(record, '5', never, ignore),
    pool.run(job('b', { n: 1 }), '6', never, ignore),
  ])) as { fields: { id: string }; token: string }[];
  assert.deepEqual(
    results.map((r) => [r.fields.id, r.token]),
    [
      ['a', '5'],
      ['b', '6'],
    ],
  );
  const runs = sent.filter((m): m is { kind: string; jobs: ArrayBuffer } => (m as { kind?: string }).kind === 'run');
  assert.equal(runs.length, 1, 'both jobs in one message');
  const [run] = runs;
  assert.deepEqual(Object.keys(run as object).sort(), ['jobs', 'kind', 'processor']);
  assert.ok(run?.jobs instanceof ArrayBuffer);
  assert.equal(run?.jobs.byteLength, 0, 'moved to the thread: detached here');
  assert.equal(record.byteLength > 1000, true, "the record's own bytes are left whole");
});

test('a job alone on its thread goes as its bytes, moved (detached here once sent)', async (t) => {
  const tasks: { jobs?: unknown }[] = [];
  const run = Piscina.prototype.run;
  Piscina.prototype.run = function (this: Piscina, task: { jobs?: unknown }, opts?: never) {
    tasks.push(task);
    return run.call(this, task, opts);
  };
  t.after(() => {
    Piscina.prototype.run = run;
  });
  const pool = new ThreadPool(PROCESSOR, { concurrency: 1, threads: 1 });
  t.after(() => pool.close());
  assert.equal(pool.jobsPerThread, 1);
  const result = (await pool.run(recordBytes('c', { deep: [[['✓']]] }), '9', never, ignore)) as {
    fields: { id: string };
    data: unknown;
  };
  assert.equal(result.fields.id, 'c');
  assert.deepEqual(result.data, { deep: [[['✓']]] });
  assert.equal(tasks.length, 1);
  assert.deepEqual(Object.keys(tasks[0] as object).sort(), ['jobs', 'processor']);
  assert.ok(tasks[0]?.jobs instanceof ArrayBuffer);
  assert.equal((tasks[0] as { jobs: ArrayBuffer }).jobs.byteLength, 0, 'moved to the thread: detached here');
});
