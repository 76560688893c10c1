/**
 * A job's log lines live apart from its record (`logs/<shard>/<id>`): read
 * back by getLogs, owned by the leader's sweep once the job is gone
 * (removed, trimmed; a pass sweeps a few shards), never shown for a later
 * job of the same id nor taken from it, and the lines a record kept itself
 * (an older version) still read.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import {
  decodeRecord,
  encodeRecord,
  LOG_SWEEP_SHARDS,
  QueueStore,
  sweepOrphanLogs,
  writeLogs,
} from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { startLeader } from '../../helpers/housekeeper.js';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';
import { countNodes, prefixSession } from '../../helpers/znodes.js';

test('log lines go to their own node, not the record; the sweep deletes those of removed jobs, and a job removed as it completes writes none', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('logs', env);
  t.after(() => queue.close());
  const worker = new Worker(
    'logs',
    async (job) => {
      await job.log(`line of ${job.data.n}`);
      return job.data.n;
    },
    { ...env, housekeeping: false },
  );
  t.after(() => worker.close());
  const kept = await queue.add('k', { n: 1 });
  const removed = await queue.add('r', { n: 2 });
  const trimmed = await queue.add('t', { n: 3 }, { removeOnComplete: true });
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === 2, {
    what: 'two completed (one removed as it completed)',
  });
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'logs');
  await store.init();
  const record = decodeRecord((await session.getData(store.layout.job(kept.id))).data, 'kept');
  assert.equal(record.logs, undefined, 'no lines in the record');
  assert.deepEqual(await (await queue.getJob(kept.id))?.getLogs(), ['line of 1']);
  assert.equal(await queue.remove(removed.id), 1);
  assert.ok(await session.exists(store.layout.logs(removed.id)), "a removed job's lines wait for the sweep");
  assert.equal(await session.exists(store.layout.logs(trimmed.id)), null, 'a job removed as it completes wrote none');
  assert.equal((await sweepOrphanLogs(store, () => [])).deleted, 1);
  assert.equal(await session.exists(store.layout.logs(removed.id)), null);
  assert.deepEqual(await (await queue.getJob(kept.id))?.getLogs(), ['line of 1'], 'a live job keeps its lines');
  assert.equal((await sweepOrphanLogs(store, () => [])).deleted, 0);
  // once the last job is removed and swept, nothing of the logs is left but the directory
  await queue.remove(kept.id);
  assert.equal((await sweepOrphanLogs(store, () => [])).deleted, 1);
  assert.equal(await countNodes(session, store.layout.logsDir), 1);
});

/**
 * Queue `name` with a worker logging `run of <v>` (no housekeeping: no sweep
 * but the test's), whose job `same` ran once, logged, and was removed.
 */
async function firstRunRemoved(t: TestContext, name: string) {
  const env = await queueEnv(t);
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const worker = new Worker(name, async (job) => void (await job.log(`run of ${job.data.v}`)), {
    ...env,
    housekeeping: false,
  });
  t.after(() => worker.close());
  await queue.add('j', { v: 1 }, { jobId: 'same' });
  await waitFor(async () => (await queue.getJobState('same')) === 'completed', { what: 'first completed' });
  await queue.remove('same');
  return { env, queue, worker };
}

test("a job added again under a removed job's id does not show that job's lines, and logs its own", async (t) => {
  const { env, queue, worker } = await firstRunRemoved(t, 'reused');
  await worker.pause();
  await queue.add('j', { v: 2 }, { jobId: 'same' });
  assert.deepEqual(await (await queue.getJob('same'))?.getLogs(), [], "the earlier job's lines are not this job's");
  // no sweep in between: the new job's lines replace the earlier job's node
  worker.resume();
  await waitFor(async () => (await queue.getJobState('same')) === 'completed', { what: 'second completed' });
  assert.deepEqual(await (await queue.getJob('same'))?.getLogs(), ['run of 2']);
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'reused');
  await store.init();
  assert.equal((await sweepOrphanLogs(store, () => [])).deleted, 0, "the node is the live job's now");
  assert.deepEqual(await (await queue.getJob('same'))?.getLogs(), ['run of 2']);
});

test("the sweep leaves an earlier job's lines under an id added again to that job, and never takes the new job's", async (t) => {
  const { env, queue, worker } = await firstRunRemoved(t, 'resweep');
  await worker.close();
  await queue.add('j', { v: 2 }, { jobId: 'same' });
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'resweep');
  await store.init();
  const { stat } = await session.getData(store.layout.job('same'));
  // the new job's lines are written while the sweep runs, between its reads and its writes:
  // its node is created anew, at the version the earlier job's had
  const run = store.executor.run.bind(store.executor);
  let raced = false;
  store.executor.run = (async (...args: Parameters<typeof run>) => {
    if (!raced) {
      raced = true;
      await writeLogs(store, [{ owner: { id: 'same', czxid: stat.czxid }, lines: ['run of 2'] }]);
    }
    return run(...args);
  }) as typeof run;
  await sweepOrphanLogs(store, () => []);
  // a sweep that writes nothing for the id leaves no such window: the lines come after it
  if (!raced) await writeLogs(store, [{ owner: { id: 'same', czxid: stat.czxid }, lines: ['run of 2'] }]);
  assert.deepEqual(await (await queue.getJob('same'))?.getLogs(), ['run of 2'], "the new job's lines are kept");
  assert.equal((await sweepOrphanLogs(store, () => [])).deleted, 0, "the live job's node stays");
  await queue.remove('same');
  assert.equal((await sweepOrphanLogs(store, () => [])).deleted, 1, 'and goes once its job is gone');
});

test('a sweep pass costs a few requests per shard, not per logged job, and the passes together cover every shard', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('paged', env);
  t.after(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: 400 }, (_, n) => ({ name: 'p', data: { n } })));
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'paged');
  await store.init();
  await writeLogs(
    store,
    jobs.map((job) => ({ owner: { id: job.id as string, czxid: 0 }, lines: [`line of ${job.id}`] })),
  );
  const gone = jobs.filter((_, n) => n % 10 === 0).map((job) => job.id as string);
  for (const id of gone) await queue.remove(id);
  const before = session.stats.requests;
  const first = await sweepOrphanLogs(store, () => [], { shards: LOG_SWEEP_SHARDS });
  const spent = session.stats.requests - before;
  // a listing of the logs, and per shard its stat, its listing, one read of its jobs, its deletes
  // and, left empty, its own stat and delete (the old sweep sent two reads per logged job: 800 here)
  assert.ok(spent <= 1 + LOG_SWEEP_SHARDS * 6, `a pass of ${LOG_SWEEP_SHARDS} shards sent ${spent} requests`);
  assert.ok(first.next !== undefined, 'a pass sweeps some shards only');
  let deleted = first.deleted;
  let from: string | undefined = first.next;
  for (let pass = 0; from !== undefined && pass < 256; pass++) {
    const next = await sweepOrphanLogs(store, () => [], { from, shards: LOG_SWEEP_SHARDS });
    deleted += next.deleted;
    from = next.next;
  }
  assert.equal(from, undefined, 'the passes came round to the first shard');
  assert.equal(deleted, gone.length, 'the passes deleted the lines of every removed job');
  for (const id of gone) assert.equal(await session.exists(store.layout.logs(id)), null);
  const live = jobs[1]?.id as string;
  assert.deepEqual(await (await queue.getJob(live))?.getLogs(), [`line of ${live}`]);
});

test("the leader's housekeeping, a few shards a pass, comes round to every removed job's lines", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('rounds', env);
  t.after(() => queue.close());
  // sweeping every 100 ms: the 256 shards take 16 passes
  const { store, session } = await startLeader(t, env, 'rounds', { stalledInterval: 100, sweepMs: 100 });
  const jobs = await queue.addBulk(Array.from({ length: 40 }, (_, n) => ({ name: 'r', data: { n } })));
  await writeLogs(
    store,
    jobs.map((job) => ({ owner: { id: job.id as string, czxid: 0 }, lines: ['a line'] })),
  );
  const [kept, ...removed] = jobs.map((job) => job.id as string);
  for (const id of removed) await queue.remove(id);
  await waitFor(
    async () =>
      (await Promise.all(removed.map((id) => session.exists(store.layout.logs(id))))).every((s) => s === null),
    { timeoutMs: 30_000, what: "every removed job's lines swept" },
  );
  assert.deepEqual(await (await queue.getJob(kept as string))?.getLogs(), ['a line']);
});

test('a record that kept its own lines (before logs lived apart) still reads them, before the new ones', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('legacy', env);
  t.after(() => queue.close());
  const job = await queue.add('l', {}, { jobId: 'old' });
  const session = await prefixSession(t, env);
  const store = new QueueStore(session, 'legacy');
  await store.init();
  const { data, stat } = await session.getData(store.layout.job('old'));
  const record = { ...decodeRecord(data, 'old'), logs: ['kept in the record'] };
  await session.setData(store.layout.job('old'), encodeRecord(record), stat.version);
  assert.deepEqual(await job.getLogs(), ['kept in the record']);
  const worker = new Worker('legacy', async (j) => void (await j.log('new line')), { ...env, housekeeping: false });
  t.after(() => worker.close());
  await waitFor(async () => (await queue.getJobState('old')) === 'completed', { what: 'completed' });
  assert.deepEqual(await (await queue.getJob('old'))?.getLogs(), ['kept in the record', 'new line']);
});
