/**
 * QueueEvents `drained`, logged by a worker whose claim found the queue idle
 * after its own finishes (drained.ts):
 *
 * - two workers finishing the last two jobs at once: the second to look
 *   finds the mark already written for the same dry queue (the claims
 *   directory's pzxid) and logs nothing (BullMQ logs it once, in its finish);
 * - a worker working through a backlog never looks: a listener costs no
 *   request per job (events ride in the transactions already sent).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Op, Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { type Job, Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { workerRequestsPerJob } from '../../helpers/requests.js';
import { waitFor } from '../../helpers/zk.js';

/**
 * Once the transaction of `session` that deletes `path` (a claim: the job's finish) has
 * committed, `then` runs; every later request of the session waits until it is done.
 */
function holdAfterCommitDeleting(session: Session, path: string, then: () => Promise<unknown>): void {
  let held: Promise<unknown> | undefined;
  const methods = session as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const name of ['multi', 'create', 'delete', 'setData', 'getData', 'exists', 'getChildren', 'readMulti']) {
    const original = methods[name]?.bind(session);
    if (!original) continue;
    methods[name] = async (...args: unknown[]) => {
      if (held) await held;
      const result = await original(...args);
      const ops = name === 'multi' ? (args[0] as Op[]) : [];
      if (ops.some((op) => op.op === 'delete' && op.path === path)) held ??= then();
      return result;
    };
  }
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

test('`drained` is logged once when two workers finish the last two jobs at once', {}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('drained-twice', env);
  const events = new QueueEvents('drained-twice', env);
  t.after(() => Promise.all([events.close(), queue.close()]));
  await events.waitUntilReady();
  let drained = 0;
  events.on('drained', () => {
    drained++;
  });
  const [first, second] = (await queue.addBulk([
    { name: 'j', data: 1 },
    { name: 'j', data: 2 },
  ])) as [Job, Job];
  const gates = { a: gate(), b: gate() };
  // one job each (concurrency 1); a long lock: no renewal transaction meanwhile
  const opts = { ...env, concurrency: 1, lockDuration: 120_000 };
  const a = new Worker('drained-twice', () => gates.a.wait, opts);
  await waitFor(async () => (await queue.getJobCounts('active')).active === 1, { what: 'worker A to take a job' });
  const mine = (await first.getState()) === 'active' ? first : second;
  const b = new Worker('drained-twice', () => gates.b.wait, opts);
  t.after(() => Promise.all([a.close(), b.close()]));
  await waitFor(async () => (await queue.getJobCounts('active')).active === 2, { what: 'worker B to take the other' });

  // A's finish commits; before A looks at the queue, B finishes and its look logs `drained`
  holdAfterCommitDeleting(await a.client, new QueueLayout('drained-twice').claim(mine.id), async () => {
    gates.b.open();
    await waitFor(() => drained === 1, { what: "B's drained" });
  });
  gates.a.open();
  await waitFor(async () => (await first.getState()) === 'completed' && (await second.getState()) === 'completed', {
    what: 'both jobs to complete',
  });
  await waitFor(() => drained >= 1, { what: 'drained' });
  // A's look, let go now, finds the queue drained too: a second `drained` follows at once
  await assert.rejects(
    waitFor(() => drained >= 2, { timeoutMs: 4000, what: 'a second drained' }),
    /timed out/,
    'drained was logged twice for one queue going empty',
  );
});

/** Requests a worker at concurrency 1 sends per job over a backlog of `jobs`. */
async function requestsPerJob(t: { name?: string; after: (fn: () => unknown) => void }, name: string, listen: boolean) {
  const env = await queueEnv(t);
  const queue = new Queue(name, env);
  const events = listen ? new QueueEvents(name, env) : undefined;
  t.after(() => Promise.all([events?.close(), queue.close()]));
  await events?.waitUntilReady();
  const jobs = 300;
  await queue.addBulk(Array.from({ length: jobs }, () => ({ name: 'j', data: 0, opts: { removeOnComplete: true } })));
  return workerRequestsPerJob(t, env, name, jobs);
}

test('a QueueEvents listener adds no request per job to a worker working through a backlog', {}, async (t) => {
  const quiet = await requestsPerJob(t, 'unheard', false);
  const heard = await requestsPerJob(t, 'heard', true);
  assert.ok(heard - quiet <= 0.5, `requests per job: ${quiet.toFixed(2)} unheard, ${heard.toFixed(2)} heard`);
});
