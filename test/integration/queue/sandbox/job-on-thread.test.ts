/**
 * A job reaches its thread intact: the processor there gets the fields the
 * main thread's Job has (Job.toJSON()), its data as read from the record
 * (unicode of every kind, deep nesting, a size near the record's limit),
 * the token, and its methods, whether it has a thread to itself or shares
 * one. The job travels as the bytes of its record (sandbox/protocol.ts).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MessagePort } from 'node:worker_threads';
import { type JobJson, MAX_RECORD_BYTES } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/describe-job.mjs', import.meta.url));

interface Described {
  fields: Record<string, unknown>;
  token: string;
  keys: string[];
  methods: string[];
  dataDigest: string;
  dataBytes: number;
  data?: unknown;
}

/** Text that JSON and UTF-8 must carry exactly: every width of UTF-8, astral and combining characters, controls. */
const UNICODE =
  'ascii é ß 中文 日本語 한국어 עברית العربية 🎉👩‍👩‍👧‍👦 𝄞 e\u0301 \u0000 \u0007 \u2028 \u2029 \uFEFF "quoted" \\back\\slash\\ \ud800 lone \udfff';

function nested(depth: number): unknown {
  let v: unknown = { leaf: UNICODE, n: -0.000_001, big: 2 ** 53 - 1 };
  for (let i = 0; i < depth; i++) v = { [`level ${i} ✓`]: v, list: [i, null, true, { i }] };
  return v;
}

const digest = (data: unknown) => createHash('sha256').update(JSON.stringify(data)).digest('hex');

for (const jobsPerThread of [1, 2]) {
  test(`a job reaches its thread intact: unicode, nesting, a size near the limit (jobsPerThread ${jobsPerThread})`, async (t) => {
    const env = await queueEnv(t);
    const queue = new Queue(`intact-${jobsPerThread}`, env);
    t.after(() => queue.close());
    // data near the record's limit: the rest of the record (options, fields) is well under 10 KB
    const filler = 'ü✓𝄞'.repeat(Math.floor((MAX_RECORD_BYTES - 10_000) / 9));
    const jobs = [
      { name: 'unicode ✓ 🎉', data: { text: UNICODE, keys: { [UNICODE]: UNICODE } } },
      { name: 'nested', data: nested(60) },
      { name: 'types', data: { at: new Date(0), bytes: Buffer.from('zkq'), list: [1, 'two', [3]], none: null } },
      { name: 'large', data: { filler, tail: UNICODE } },
    ];
    const added = await Promise.all(
      jobs.map((j) => queue.add(j.name, j.data, { attempts: 2, backoff: { type: 'fixed', delay: 10 }, priority: 3 })),
    );
    const seen = new Map<string, JobJson & { token?: string }>();
    const worker = new Worker(`intact-${jobsPerThread}`, PROCESSOR, {
      ...env,
      concurrency: 4,
      threads: jobsPerThread === 1 ? 4 : 2,
      jobsPerThread,
    });
    t.after(() => worker.close());
    worker.on('active', (job) => seen.set(job.id, { ...job.toJSON(), token: job.token }));
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === jobs.length, {
      what: `${jobs.length} completed`,
    });
    for (const [i, a] of added.entries()) {
      const done = await queue.getJob(a.id);
      const d = done?.returnvalue as Described;
      const main = seen.get(a.id) as JobJson & { token: string };
      // the data as JSON carries it (what an inline processor gets from the record too)
      const expected = JSON.parse(JSON.stringify(jobs[i]?.data));
      assert.equal(d.dataDigest, digest(expected), `${a.name}: data`);
      if (d.data !== undefined) assert.deepEqual(d.data, expected, `${a.name}: data`);
      const { data: _data, ...fields } = main;
      const { token, ...json } = fields;
      // as stored: a result is JSON, which drops the fields left undefined
      assert.deepEqual(d.fields, JSON.parse(JSON.stringify({ ...json, token })), `${a.name}: the main thread's fields`);
      assert.equal(d.token, token);
      // the same own properties as the main thread's job, plus the thread's methods
      assert.deepEqual(d.keys.sort(), [...Object.keys(a.toJSON()), 'token', 'updateProgress', 'log'].sort());
      assert.deepEqual(d.methods, ['function', 'function']);
    }
    const large = (await queue.getJob(added[3]?.id as string))?.returnvalue as Described;
    assert.ok(large.dataBytes > MAX_RECORD_BYTES - 20_000, `large data: ${large.dataBytes} bytes`);
  });
}

test('a claimed job goes to its thread as the record the claim wrote, not encoded again', async (t) => {
  const sent: Record<string, unknown>[] = [];
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (this: MessagePort, m: unknown, transfer?: never) {
    const jobs =
      (m as { kind?: string; jobs?: ArrayBuffer }).kind === 'run' ? (m as { jobs: ArrayBuffer }).jobs : undefined;
    if (jobs) for (const task of JSON.parse(Buffer.from(jobs).toString('utf8'))) sent.push(task.job);
    return post.call(this, m, transfer);
  };
  t.after(() => {
    MessagePort.prototype.postMessage = post;
  });
  const env = await queueEnv(t);
  const queue = new Queue('as-claimed', env);
  t.after(() => queue.close());
  const worker = new Worker('as-claimed', PROCESSOR, { ...env, concurrency: 2, threads: 1 });
  t.after(() => worker.close());
  const job = await queue.add('r', { n: 1 });
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1, { what: 'completed' });
  assert.equal(sent.length, 1);
  // the record's own fields came along (the thread leaves them out of its job)
  assert.deepEqual([sent[0]?.id, sent[0]?.v, sent[0]?.state], [job.id, 1, 'active']);
  const described = (await queue.getJob(job.id))?.returnvalue as Described;
  assert.equal(described.keys.includes('state'), false);
});
