/**
 * A job whose record an earlier version wrote (its log lines in the record,
 * no stack trace field) reaches its thread as the main thread's Job has it:
 * the record's other fields left out, the stack trace an empty list, and
 * the lines it logs there added after the record's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { JobJson } from '@zkq/core';
import { decodeRecord, encodeRecord, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';
import { prefixSession } from '../../../helpers/znodes.js';

const PROCESSOR = fileURLToPath(new URL('../../../fixtures/processors/describe-attempt.mjs', import.meta.url));

type Seen = JobJson & { token?: string };

for (const jobsPerThread of [1, 2]) {
  test(`a job of an earlier version's record reaches its thread as the main thread's Job has it (jobsPerThread ${jobsPerThread})`, async (t) => {
    const env = await queueEnv(t);
    const name = `older-record-${jobsPerThread}`;
    const queue = new Queue(name, env);
    t.after(() => queue.close());
    const job = await queue.add('old', { log: 'new line' }, { jobId: 'old' });
    const session = await prefixSession(t, env);
    const store = new QueueStore(session, name);
    await store.init();
    const { data, stat } = await session.getData(store.layout.job('old'));
    const { stacktrace: _none, ...record } = { ...decodeRecord(data, 'old'), logs: ['kept in the record'] };
    await session.setData(
      store.layout.job('old'),
      encodeRecord(record as typeof record & { stacktrace: [] }),
      stat.version,
    );
    const worker = new Worker(name, PROCESSOR, { ...env, concurrency: 2, threads: 1, jobsPerThread });
    t.after(() => worker.close());
    const seen: Seen[] = [];
    worker.on('active', (j) => seen.push({ ...j.toJSON(), token: j.token }));
    await waitFor(async () => (await queue.getJobState(job.id)) === 'completed', { what: 'completed' });
    const done = await queue.getJob(job.id);
    const described = done?.returnvalue as { fields: Record<string, unknown>; token: string; keys: string[] };
    const { data: _data, token, ...json } = seen[0] as Seen;
    assert.deepEqual(json.stacktrace, []);
    assert.deepEqual(described.fields, JSON.parse(JSON.stringify({ ...json, token })));
    assert.equal(described.keys.includes('logs'), false);
    assert.deepEqual(await done?.getLogs(), ['kept in the record', 'new line']);
  });
}
