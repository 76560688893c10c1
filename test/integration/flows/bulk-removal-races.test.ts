/**
 * Bulk removals of jobs of flows racing workers. drain and clean read a
 * chunk of jobs, then remove each job of a flow on its own with the
 * single-job removal, which reads the job again and removes it in whatever
 * state it is then (but active), and, for the last pending child of a
 * parent in the same queue, removes that parent first in a transaction of
 * its own. A worker acting between the chunk's read and those writes:
 *
 * - claims the child: the parent (waiting-children, not a job drain takes)
 *   is removed, the child runs on and its completion has no parent to release;
 * - completes the child: drain deletes a completed job;
 * - finishes siblings (or removes them): each changes the parent's
 *   dependency node, and after five conflicts in a row drain throws;
 *   obliterate, which detaches a queue's children from parents in other
 *   queues the same way, gives up on that child silently and deletes it:
 *   its parent waits for ever.
 *
 * A transaction-level hook on the session of the queue that drains or cleans
 * makes the worker act at that point every time; the same happens, less
 * often, with a worker simply running while drain goes through a few hundred
 * children.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Op, OpResult, Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import type { Job } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { flowEnv } from '../../helpers/flows.js';
import { waitFor } from '../../helpers/zk.js';

type Ctx = { name?: string; after: (fn: () => unknown) => void };

/** The paths of `queue`'s job records `ids`. */
const records = (queue: string, ...ids: string[]) => ids.map((id) => new QueueLayout(queue).job(id));

/**
 * Before each transaction of `session` that deletes one of `deleted`,
 * `action` runs (and the transaction is sent after it); `times`
 * transactions at most.
 */
function beforeDeleting(session: Session, deleted: string[], action: () => Promise<unknown>, times = 1) {
  const paths = new Set(deleted);
  const original = session.multi.bind(session);
  let left = times;
  session.multi = async (ops: readonly Op[]): Promise<OpResult[]> => {
    if (left > 0 && ops.some((op) => op.op === 'delete' && paths.has(op.path))) {
      left--;
      await action();
    }
    return original(ops);
  };
}

const stateOf = (job: Job) => job.getState();

test('drain does not remove a waiting-children parent whose last child a worker claimed meanwhile', {}, async (t: Ctx) => {
  const {
    env,
    flows,
    queues: { q },
  } = await flowEnv(t, 'q');
  // parent and child in the same queue: drain takes the parent first (BullMQ's hard removal)
  const tree = await flows.add({ name: 'parent', queueName: 'q', children: [{ name: 'child', queueName: 'q' }] });
  const parent = tree.job;
  const child = tree.children?.[0]?.job as Job;

  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let worker: Worker | undefined;
  t.after(() => worker?.close());
  // after drain read the child waiting, before it writes: a worker claims the child
  beforeDeleting(await q.client, records('q', parent.id, child.id), async () => {
    worker = new Worker('q', async (job) => (job.id === child.id ? gate.then(() => 'done') : 'parent done'), env);
    await waitFor(async () => (await stateOf(child)) === 'active', { what: 'the child to be claimed' });
  });
  await q.drain();

  release();
  await waitFor(async () => (await stateOf(child)) === 'completed', { what: 'the child to complete' });
  // the child ran to completion, whose transaction releases its parent, as without the drain
  const state = await stateOf(parent);
  assert.notEqual(state, 'unknown', 'the parent was removed while its child ran');
  assert.notEqual(state, 'waiting-children');
});

test('drain does not remove a child that a worker completed after drain read it waiting', {}, async (t: Ctx) => {
  const {
    env,
    flows,
    queues: { kids },
  } = await flowEnv(t, 'kids');
  const tree = await flows.add({ name: 'parent', queueName: 'parents', children: [{ name: 'c', queueName: 'kids' }] });
  const child = tree.children?.[0]?.job as Job;

  beforeDeleting(await kids.client, records('kids', child.id), async () => {
    const worker = new Worker('kids', async () => 'done', env);
    await waitFor(async () => (await stateOf(child)) === 'completed', { what: 'the child to complete' });
    await worker.close();
  });
  await kids.drain();
  assert.equal(await stateOf(child), 'completed', 'drain deleted a completed job (it only takes waiting ones)');
});

test('clean(wait) does not remove a child that a worker completed after clean read it waiting', {}, async (t: Ctx) => {
  const {
    env,
    flows,
    queues: { kids },
  } = await flowEnv(t, 'kids');
  const tree = await flows.add({ name: 'parent', queueName: 'parents', children: [{ name: 'c', queueName: 'kids' }] });
  const child = tree.children?.[0]?.job as Job;

  beforeDeleting(await kids.client, records('kids', child.id), async () => {
    const worker = new Worker('kids', async () => 'done', env);
    await waitFor(async () => (await stateOf(child)) === 'completed', { what: 'the child to complete' });
    await worker.close();
  });
  const cleaned = await kids.clean(0, 0, 'wait');
  assert.equal(await stateOf(child), 'completed', 'clean(wait) deleted a completed job');
  assert.deepEqual(cleaned, []);
});

test("drain goes on while the siblings of a child it removes keep changing their parent's dependencies", {}, async (t: Ctx) => {
  const {
    flows,
    queues: { kids, others },
  } = await flowEnv(t, 'kids', 'others');
  // one child in 'kids' (drained) and eight siblings elsewhere (their standing changes meanwhile)
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: [
      { name: 'c', queueName: 'kids' },
      ...Array.from({ length: 8 }, () => ({ name: 's', queueName: 'others', opts: { delay: 600_000 } })),
    ],
  });
  const [child, ...siblings] = (tree.children ?? []).map((c) => c.job) as [Job, ...Job[]];

  // every try of the child's removal meets a sibling gone since it read the parent
  // (as siblings finishing at a worker's pace do)
  beforeDeleting(
    await kids.client,
    records('kids', child.id),
    async () => {
      const sibling = siblings.shift();
      if (sibling) await others.remove(sibling.id);
    },
    siblings.length,
  );
  await kids.drain();
  assert.equal(await stateOf(child), 'unknown', 'the child was removed');
  assert.equal(await stateOf(tree.job), 'waiting', 'no child is left: the parent goes on');
});

test("obliterate detaches a child whose siblings keep changing their parent's dependencies", {}, async (t: Ctx) => {
  const {
    flows,
    queues: { kids, others },
  } = await flowEnv(t, 'kids', 'others');
  const tree = await flows.add({
    name: 'parent',
    queueName: 'parents',
    children: [
      { name: 'c', queueName: 'kids' },
      ...Array.from({ length: 8 }, () => ({ name: 's', queueName: 'others', opts: { delay: 600_000 } })),
    ],
  });
  const [child, ...siblings] = (tree.children ?? []).map((c) => c.job) as [Job, ...Job[]];
  const entry = new QueueLayout('parents').depEntry(tree.job.id, 'u', { queue: 'kids', id: child.id });
  beforeDeleting(
    await kids.client,
    [entry],
    async () => {
      const sibling = siblings.shift();
      if (sibling) await others.remove(sibling.id);
    },
    siblings.length,
  );
  await kids.obliterate();
  // the siblings not removed meanwhile go too: nothing is left for the parent to wait for
  for (const sibling of siblings) await others.remove(sibling.id);
  assert.equal((await tree.job.getDependenciesCount()).unprocessed, 0, 'a dependency names a job that is gone');
  assert.equal(await stateOf(tree.job), 'waiting', 'every child is gone: the parent goes on');
});
