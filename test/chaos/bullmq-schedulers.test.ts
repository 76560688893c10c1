/**
 * A job scheduler run by BullMQ Worker processes on ZooKeeper whose clocks
 * disagree by seconds, each upserting the scheduler as it starts; one is
 * killed mid-run. One job per tick, every tick on the same grid, each
 * completed once, and the schedule goes on after the kill.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { withBackend } from 'bullmq';
import { type Fixture, spawnFixture } from '../helpers/process.js';
import { queueEnv } from '../helpers/queue.js';
import { waitFor } from '../helpers/zk.js';

const WORKER = fileURLToPath(new URL('../fixtures/bullmq/worker-process.ts', import.meta.url));
const { Queue } = withBackend(createZooKeeperBackend);
const EVERY = 300;
/** Rounding of the times compared (whole ms on both sides). */
const CLOCK_SLACK_MS = 2;

const started = (procs: Fixture[]) =>
  procs.flatMap((p) => p.lines.filter((l) => l.startsWith('started ')).map((l) => l.slice(8)));
const completed = (procs: Fixture[]) =>
  procs.flatMap((p) => p.lines.filter((l) => l.startsWith('completed ')).map((l) => l.slice(10)));

test('skewed clocks, concurrent upserts and a killed worker: one job per tick, on one grid', async (t) => {
  const env = await queueEnv(t);
  const connection = { ...env.connection, namespace: env.prefix };
  const queue = new Queue('skew', { connection });
  t.after(() => queue.close());
  const spawnWorker = (skewMs: number) =>
    spawnFixture(WORKER, [
      JSON.stringify({
        connectionString: env.connection.connectionString,
        namespace: env.prefix,
        queue: 'skew',
        sleepMs: 50,
        sessionTimeout: 2000,
        skewMs,
        scheduler: { id: 'tick', every: EVERY },
      }),
    ]);
  // the first to start leads the housekeeping (it promotes the ticks): the one whose clock runs ahead
  const procs = [spawnWorker(4000)];
  t.after(() => {
    for (const p of procs) p.child.kill('SIGKILL');
  });
  await procs[0]?.waitForLine(/^ready$/);
  procs.push(spawnWorker(0), spawnWorker(-4000));
  await Promise.all(procs.map((p) => p.waitForLine(/^ready$/)));
  await waitFor(async () => new Set(completed(procs)).size >= 8, { timeoutMs: 60_000, what: 'eight ticks' });

  // kill the process that started the latest tick: it may be between its claim and the next tick
  const latest = started(procs).at(-1);
  const victim = procs.find((p) => p.lines.includes(`started ${latest}`)) as Fixture;
  victim.child.kill('SIGKILL');
  await victim.exited;
  const before = new Set(completed(procs)).size;
  await waitFor(async () => new Set(completed(procs)).size >= before + 8, {
    timeoutMs: 60_000,
    what: 'eight more ticks after the kill',
  });

  const ids = [...new Set(started(procs))];
  const millis = ids.map((id) => Number(id.split(':').pop())).sort((a, b) => a - b);
  for (const id of ids) assert.match(id, /^repeat:tick:\d+$/);
  const grid = (millis[0] as number) % EVERY;
  for (const m of millis) assert.equal(m % EVERY, grid, `tick ${m} is on the grid of the first`);
  const done = completed(procs);
  assert.equal(new Set(done).size, done.length, 'no tick completed twice');
  const survivors = procs.filter((p) => p !== victim);
  for (const id of started([victim])) {
    if (!done.includes(id)) {
      await waitFor(async () => completed(survivors).includes(id), { timeoutMs: 30_000, what: `tick ${id} rerun` });
    }
  }
  // ticks are timed on ZooKeeper's clock (this machine's, here): none starts early, whatever its upserter's clock
  for (const p of procs) {
    for (const line of p.lines.filter((l) => l.startsWith('at '))) {
      const [, id, at] = line.split(' ');
      const tick = Number(id?.split(':').pop());
      assert.ok(Number(at) >= tick - CLOCK_SLACK_MS, `${id} started at ${at}, before its time`);
    }
  }
  assert.equal((await queue.getJobSchedulers()).length, 1);
});
