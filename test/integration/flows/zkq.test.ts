/**
 * Flows on zkq's own front-end: FlowProducer, `opts.parent` on Queue.add,
 * parents that wait for their children across queues and run zkq Workers,
 * the failure policies, the dependency getters, moveToWaitingChildren, and
 * what is refused before anything is written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createZooKeeperBackend } from '@zkq/bullmq';
import { FlowProducer, type Job, Queue, QueueEvents, WaitingChildrenError } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { type Job as BullJob, withBackend } from 'bullmq';
import { flowEnv } from '../../helpers/flows.js';
import { bullEnv, queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

const Bull = withBackend(createZooKeeperBackend);

test('a flow across two queues: the parent waits, then runs with its children values', async (t) => {
  const {
    env,
    flows,
    queues: { renders },
  } = await flowEnv(t, 'renders', 'steps');

  const tree = await flows.add({
    name: 'render',
    queueName: 'renders',
    data: { movie: 'm1' },
    children: [
      { name: 'step', queueName: 'steps', data: { n: 1 } },
      { name: 'step', queueName: 'steps', data: { n: 2 }, opts: { jobId: 'step-two' } },
      // a child in the parent's own queue, itself a parent
      {
        name: 'step',
        queueName: 'renders',
        data: { n: 3 },
        children: [{ name: 'step', queueName: 'steps', data: { n: 4 } }],
      },
    ],
  });
  const root = tree.job;
  assert.match(root.id, /^\d+$/, 'numeric ids from the queue counter');
  assert.deepEqual(
    tree.children?.map((c) => [c.job.queueName, c.job.parentKey, c.job.parent?.id]),
    [
      ['steps', `${env.prefix}:renders:${root.id}`, root.id],
      ['steps', `${env.prefix}:renders:${root.id}`, root.id],
      ['renders', `${env.prefix}:renders:${root.id}`, root.id],
    ],
  );
  assert.equal(tree.children?.[1]?.job.id, 'step-two');
  const middle = tree.children?.[2] as { job: Job; children?: { job: Job }[] };
  assert.equal(middle.children?.[0]?.job.parentKey, `${env.prefix}:renders:${middle.job.id}`);
  assert.equal(await root.getState(), 'waiting-children');
  assert.equal(await root.isWaitingChildren(), true);
  assert.deepEqual(await renders.getJobCounts('waiting-children', 'waiting'), { 'waiting-children': 2, waiting: 0 });
  assert.equal((await renders.getJobCounts())['waiting-children'], 2, 'counted by default too');
  assert.equal(await renders.count(), 2, 'count() counts parents waiting for children');
  assert.deepEqual((await renders.getWaitingChildren()).map((j) => j.id).sort(), [root.id, middle.job.id].sort());
  assert.equal(await renders.getWaitingChildrenCount(), 2);
  assert.deepEqual(await root.getDependenciesCount(), { processed: 0, unprocessed: 3, ignored: 0, failed: 0 });
  assert.deepEqual(await root.getDependenciesCount({ unprocessed: true }), { unprocessed: 3 });

  let parentSaw: Record<string, unknown> | undefined;
  const stepWorker = new Worker('steps', async (job) => job.data.n * 10, { ...env, concurrency: 2 });
  const renderWorker = new Worker(
    'renders',
    async (job) => {
      const values = await job.getChildrenValues<number>();
      if (job.name === 'step') return job.data.n * 10 + Object.values(values).reduce((a, b) => a + b, 0);
      parentSaw = values;
      return 'rendered';
    },
    env,
  );
  t.after(() => Promise.all([stepWorker.close(), renderWorker.close()]));

  await waitFor(async () => (await renders.getJob(root.id))?.returnvalue === 'rendered', {
    timeoutMs: 20_000,
    what: 'the parent to complete',
  });
  assert.deepEqual(parentSaw, {
    [`${env.prefix}:steps:${tree.children?.[0]?.job.id}`]: 10,
    [`${env.prefix}:steps:step-two`]: 20,
    [`${env.prefix}:renders:${middle.job.id}`]: 70, // 30 + its own child's 40
  });
  const deps = await (await renders.getJob(root.id))?.getDependencies();
  assert.deepEqual(Object.keys(deps?.processed ?? {}).length, 3);
  assert.deepEqual(deps?.unprocessed, []);
  const page = await root.getDependencies({ processed: { cursor: 0, count: 2 } });
  assert.equal(Object.keys(page.processed ?? {}).length, 2);
  assert.equal(page.nextProcessedCursor, 2);

  const flow = await flows.getFlow({ id: root.id, queueName: 'renders' });
  assert.equal(flow?.children?.length, 3);
  const grandchild = flow?.children?.find((c) => c.job.id === middle.job.id)?.children?.[0];
  assert.equal(grandchild?.job.returnvalue, 40);
  assert.equal((await flows.getFlow({ id: root.id, queueName: 'renders', depth: 0 }))?.children, undefined);
});

test('failure policies: failParentOnFailure fails the parent, ignoreDependencyOnFailure lets it run, a plain failure waits', async (t) => {
  const {
    env,
    flows,
    queues: { q: queue },
  } = await flowEnv(t, 'q');
  const [failing, ignoring, waiting] = await flows.addBulk([
    {
      name: 'parent',
      queueName: 'q',
      children: [
        { name: 'bad', queueName: 'q', opts: { failParentOnFailure: true } },
        { name: 'slow', queueName: 'q' },
      ],
    },
    {
      name: 'parent',
      queueName: 'q',
      children: [
        { name: 'bad', queueName: 'q', opts: { ignoreDependencyOnFailure: true } },
        { name: 'good', queueName: 'q' },
      ],
    },
    { name: 'parent', queueName: 'q', children: [{ name: 'bad', queueName: 'q' }] },
  ]);
  let ran = 0;
  const worker = new Worker(
    'q',
    async (job) => {
      if (job.name === 'bad') throw new Error('child broke');
      if (job.name === 'parent') ran++;
      return job.name;
    },
    { ...env, concurrency: 3 },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await failing?.job.getState()) === 'failed', { timeoutMs: 20_000, what: 'fpof parent' });
  const failed = await queue.getJob(failing?.job.id as string);
  assert.equal(failed?.failedReason, `child ${env.prefix}:q:${failing?.children?.[0]?.job.id} failed`);
  await waitFor(async () => (await ignoring?.job.getState()) === 'completed', { timeoutMs: 20_000, what: 'idof' });
  const ignored = await (await queue.getJob(ignoring?.job.id as string))?.getIgnoredChildrenFailures();
  assert.deepEqual(ignored, { [`${env.prefix}:q:${ignoring?.children?.[0]?.job.id}`]: 'child broke' });
  assert.equal(ran, 1, 'only the ignoring parent ran its processor');

  const child = waiting?.children?.[0]?.job as Job;
  await waitFor(async () => (await child.getState()) === 'failed', { timeoutMs: 20_000, what: 'the plain child' });
  assert.equal(await waiting?.job.getState(), 'waiting-children');
  await child.remove(); // the last pending child leaves: the parent goes on
  await waitFor(async () => (await waiting?.job.getState()) === 'completed', { timeoutMs: 20_000, what: 'release' });
});

test('Queue.add with opts.parent joins a parent (by queue name or <prefix>:<queue>); a missing parent is refused', async (t) => {
  const env = await queueEnv(t);
  const parents = new Queue('parents', env);
  const kids = new Queue('kids', env);
  t.after(() => Promise.all([parents.close(), kids.close()]));
  await assert.rejects(kids.add('orphan', {}, { parent: { id: 'nope', queue: 'parents' } }), {
    code: 'ZKQ_MISSING_PARENT',
  });
  assert.equal(await kids.count(), 0, 'nothing added');

  const parent = await parents.add('parent', {}, { delay: 600_000 });
  const a = await kids.add('a', { v: 1 }, { parent: { id: parent.id, queue: 'parents' } });
  const b = await kids.add('b', { v: 2 }, { parent: { id: parent.id, queue: parents.qualifiedName }, jobId: 'kid-b' });
  assert.equal(parents.qualifiedName, `${env.prefix}:parents`);
  assert.equal(a.parentKey, `${env.prefix}:parents:${parent.id}`);
  assert.equal((await kids.getJob(b.id))?.parentKey, `${env.prefix}:parents:${parent.id}`);
  assert.deepEqual(await parent.getDependenciesCount(), { processed: 0, unprocessed: 2, ignored: 0, failed: 0 });
  // a custom id that exists answers with the existing job, as without a parent
  const duplicates: string[] = [];
  kids.on('duplicated', (id) => duplicates.push(id));
  const again = await kids.add('b', { v: 3 }, { parent: { id: parent.id, queue: 'parents' }, jobId: 'kid-b' });
  assert.deepEqual([again.id, again.data, duplicates], ['kid-b', { v: 2 }, ['kid-b']]);
  assert.equal((await parent.getDependenciesCount()).unprocessed, 2);
});

test('bad flows are refused with typed errors before anything is written', async (t) => {
  const {
    env,
    flows,
    queues: { v: queue },
  } = await flowEnv(t, 'v');
  const leaf = { name: 'leaf', queueName: 'v' };
  const refused: [unknown, { code: string; argument?: string }][] = [
    [
      { ...leaf, queueName: 'a:b' },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'name' },
    ],
    [
      { ...leaf, name: 7 },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'name' },
    ],
    [{ ...leaf, data: { f: () => 1 } }, { code: 'ZKQ_INVALID_JOB_DATA' }],
    [
      { ...leaf, opts: { attempts: 0 } },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'opts.attempts' },
    ],
    [
      { ...leaf, opts: { jobId: '42' } },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'opts.jobId' },
    ],
    [
      { ...leaf, opts: { deduplication: { id: 'd' } } },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'flow.opts.deduplication' },
    ],
    [
      { ...leaf, prefix: 'elsewhere' },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'flow.prefix' },
    ],
    [
      { ...leaf, children: {} },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'flow' },
    ],
    [
      { ...leaf, opts: { parent: { id: 'x' } } },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'opts.parent.queue' },
    ],
    [
      { ...leaf, opts: { parent: { id: '', queue: 'v' } } },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'opts.parent.id' },
    ],
    [
      { ...leaf, opts: { failParentOnFailure: true, removeDependencyOnFailure: true } },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'opts.removeDependencyOnFailure' },
    ],
    [
      { ...leaf, children: [{ ...leaf, opts: { parent: { id: '1', queue: 'v' } } }] },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'flow.children[0].opts.parent' },
    ],
    [
      {
        ...leaf,
        children: [
          { ...leaf, opts: { jobId: 'twice' } },
          { ...leaf, opts: { jobId: 'twice' } },
        ],
      },
      { code: 'ZKQ_INVALID_ARGUMENT', argument: 'flow.children[1].opts.jobId' },
    ],
    [{ ...leaf, children: [{ ...leaf, children: [{ ...leaf, data: 1n }] }] }, { code: 'ZKQ_INVALID_JOB_DATA' }],
  ];
  for (const [flow, expected] of refused) {
    await assert.rejects(
      flows.add(flow as never),
      expected,
      JSON.stringify(flow, (_k, v) => String(v)),
    );
  }
  await assert.rejects(flows.addBulk({} as never), { code: 'ZKQ_INVALID_ARGUMENT', argument: 'flows' });
  await assert.rejects(flows.add(leaf, { queuesOptions: { v: { defaultJobOptions: { attempts: -1 } } } }), {
    code: 'ZKQ_INVALID_ARGUMENT',
    argument: 'opts.attempts',
  });
  await assert.rejects(queue.add('x', {}, { parent: { id: '1', queue: 'v' }, deduplication: { id: 'd' } }), {
    code: 'ZKQ_INVALID_ARGUMENT',
    argument: 'opts.deduplication',
  });

  // refused by the store: a missing parent, a custom id taken; a whole bulk adds nothing then
  await assert.rejects(flows.add({ ...leaf, opts: { parent: { id: 'gone', queue: 'v' } } }), {
    code: 'ZKQ_MISSING_PARENT',
  });
  await queue.add('taken', {}, { jobId: 'taken' });
  await assert.rejects(
    flows.addBulk([
      { name: 'fine', queueName: 'other', children: [{ name: 'fine', queueName: 'other' }] },
      { ...leaf, children: [{ ...leaf, opts: { jobId: 'taken' } }] },
    ]),
    (err: Error & { code?: string; queue?: string; jobId?: string }) =>
      err.code === 'ZKQ_JOB_EXISTS' && err.queue === 'v' && err.jobId === 'taken',
  );
  const other = new Queue('other', env);
  t.after(() => other.close());
  assert.equal(await other.count(), 0, 'the first flow of the bulk was not added either');
  assert.equal(await queue.count(), 1, 'only the job added by hand');
});

test('moveToWaitingChildren parks a running parent until the children it added are done', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('spawn', env);
  const events = new QueueEvents('spawn', env);
  t.after(() => Promise.all([queue.close(), events.close()]));
  await events.waitUntilReady();
  const parked: unknown[] = [];
  events.on('waiting-children', (args) => parked.push(args));
  const steps: string[] = [];
  const reported: string[] = [];
  const worker = new Worker(
    'spawn',
    async (job) => {
      if (job.name === 'child') return job.data.v;
      if (job.name === 'alone') {
        await job.log('before');
        assert.equal(await job.moveToWaitingChildren(), false, 'nothing pending: it goes on');
        await job.log('after');
        return 'went on';
      }
      const done = (await job.getDependenciesCount({ processed: true })).processed ?? 0;
      if (done === 0) {
        const parent = { id: job.id, queue: job.queueQualifiedName };
        await queue.addBulk([
          { name: 'child', data: { v: 1 }, opts: { parent } },
          { name: 'child', data: { v: 2 }, opts: { parent } },
        ]);
        await job.log('spawned');
        steps.push('spawned');
        assert.equal(await job.moveToWaitingChildren(job.token), true);
        throw new WaitingChildrenError();
      }
      steps.push('resumed');
      return Object.values(await job.getChildrenValues()).sort();
    },
    env, // concurrency 1: no child runs before its parent parks
  );
  worker.on('completed', (job) => reported.push(`completed ${job.name}`));
  worker.on('failed', (job) => reported.push(`failed ${job?.name}`));
  worker.on('lost', (job) => reported.push(`lost ${job.name}`));
  worker.on('error', (err) => reported.push(`error ${err.message}`));
  t.after(() => worker.close());
  const parent = await queue.add('parent', {});
  const alone = await queue.add('alone', {});
  await waitFor(async () => (await parent.getState()) === 'completed', { timeoutMs: 20_000, what: 'the parent' });
  assert.deepEqual(steps, ['spawned', 'resumed']);
  const stored = await queue.getJob(parent.id);
  assert.deepEqual(stored?.returnvalue, [1, 2]);
  assert.deepEqual(await stored?.getLogs(), ['spawned'], 'the parked attempt kept its log');
  assert.equal(stored?.attemptsMade, 1, 'the park is not an attempt made');
  await waitFor(() => parked.length === 1, { what: "QueueEvents' waiting-children" });
  assert.deepEqual(parked, [{ jobId: parent.id, prev: 'active' }]);
  await waitFor(async () => (await alone.getState()) === 'completed', { what: 'the job without children' });
  assert.deepEqual(await alone.getLogs(), ['before', 'after'], 'a park that found nothing pending wrote no line');
  await waitFor(() => reported.length === 4, { what: 'the completed events' });
  assert.deepEqual(reported.sort(), ['completed alone', 'completed child', 'completed child', 'completed parent']);
});

test('a WaitingChildrenError without a park fails the attempt; a parent with a failed child cannot park', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('misuse', env);
  t.after(() => queue.close());
  const worker = new Worker(
    'misuse',
    async (job) => {
      if (job.name === 'bad') throw new Error('child broke');
      if (job.name === 'liar') throw new WaitingChildrenError();
      if (job.name === 'doomed') {
        const bad = await queue.add('bad', {}, { parent: { id: job.id, queue: 'misuse' }, failParentOnFailure: true });
        await waitFor(async () => (await bad.getState()) === 'failed', { what: 'the child to fail' });
        await job.moveToWaitingChildren(); // throws: a child failed it
      }
      return 'unreachable';
    },
    { ...env, concurrency: 2 },
  );
  t.after(() => worker.close());
  const liar = await queue.add('liar', {});
  const doomed = await queue.add('doomed', {});
  await waitFor(async () => (await liar.getState()) === 'failed', { timeoutMs: 20_000, what: 'liar' });
  assert.match((await queue.getJob(liar.id))?.failedReason ?? '', /WaitingChildrenError thrown, but the job was not/);
  await waitFor(async () => (await doomed.getState()) === 'failed', { timeoutMs: 20_000, what: 'doomed' });
  assert.match((await queue.getJob(doomed.id))?.failedReason ?? '', /has failed children: child .*:misuse:\d+ failed/);
});

test('a parent with a delay waits for it after its children are done', async (t) => {
  const {
    env,
    flows,
    queues: { later: queue },
  } = await flowEnv(t, 'later');
  const tree = await flows.add(
    { name: 'parent', queueName: 'later', children: [{ name: 'child', queueName: 'later' }] },
    { queuesOptions: { later: { defaultJobOptions: { delay: 600_000 } } } },
  );
  // the child got the queue's default delay too: promote it to run it now
  await tree.children?.[0]?.job.promote();
  const worker = new Worker('later', async () => 'ok', env);
  t.after(() => worker.close());
  await waitFor(async () => (await tree.job.getState()) === 'delayed', { timeoutMs: 20_000, what: 'delayed parent' });
  assert.equal((await queue.getJob(tree.job.id))?.delay, 600_000);
});

test('removing a parent that waits leaves its children, which run and finish on their own', async (t) => {
  const {
    env,
    flows,
    queues: { orphans: queue },
  } = await flowEnv(t, 'orphans');
  const tree = await flows.add({
    name: 'parent',
    queueName: 'orphans',
    children: [{ name: 'child', queueName: 'orphans' }],
  });
  await tree.job.remove();
  assert.equal(await tree.job.getState(), 'unknown');
  assert.deepEqual(await queue.getJobCounts('waiting-children', 'waiting'), { 'waiting-children': 0, waiting: 1 });
  const worker = new Worker('orphans', async () => 'done', env);
  t.after(() => worker.close());
  const child = tree.children?.[0]?.job as Job;
  await waitFor(async () => (await child.getState()) === 'completed', { timeoutMs: 20_000, what: 'the child' });
  assert.equal((await queue.getJob(child.id))?.returnvalue, 'done');
});

// ---- one store, two front-ends -----------------------------------------------------------

test("a flow added by zkq's FlowProducer runs on BullMQ's Workers (on @zkq/bullmq)", async (t) => {
  const { env, connection } = await bullEnv(t);
  const flows = new FlowProducer(env);
  const renders = new Bull.Queue('renders', { connection });
  t.after(() => Promise.all([flows.close(), renders.close()]));
  const tree = await flows.add({
    name: 'render',
    queueName: 'renders',
    children: [
      { name: 'step', queueName: 'steps', data: { n: 1 } },
      { name: 'step', queueName: 'steps', data: { n: 2 }, opts: { ignoreDependencyOnFailure: true } },
    ],
  });
  const [one, two] = (tree.children ?? []).map((c) => c.job);
  const seen: { values?: unknown; ignored?: unknown; parentKeys: string[] } = { parentKeys: [] };
  const steps = new Bull.Worker(
    'steps',
    async (job: BullJob) => {
      seen.parentKeys.push(job.parentKey as string);
      if (job.data.n === 2) throw new Error('two broke');
      return job.data.n * 10;
    },
    { connection },
  );
  const parents = new Bull.Worker(
    'renders',
    async (job: BullJob) => {
      seen.values = await job.getChildrenValues();
      seen.ignored = await job.getIgnoredChildrenFailures();
      return 'rendered';
    },
    { connection },
  );
  t.after(() => Promise.all([steps.close(), parents.close()]));
  await waitFor(async () => (await tree.job.getState()) === 'completed', { timeoutMs: 20_000, what: 'the parent' });
  assert.deepEqual(seen.values, { [`${env.prefix}:steps:${one?.id}`]: 10 });
  assert.deepEqual(seen.ignored, { [`${env.prefix}:steps:${two?.id}`]: 'two broke' });
  assert.deepEqual(
    seen.parentKeys,
    [tree.job.id, tree.job.id].map((id) => `${env.prefix}:renders:${id}`),
  );
  assert.equal(one?.parentKey, seen.parentKeys[0], 'both front-ends name the parent alike');
});

test("a flow added by BullMQ's FlowProducer runs on zkq's Workers, which park parents for BullMQ's children", async (t) => {
  const { env, connection } = await bullEnv(t);
  const flows = new Bull.FlowProducer({ connection });
  const bullQueue = new Bull.Queue('late', { connection });
  const renders = new Queue('renders', env);
  t.after(() => Promise.all([flows.close(), bullQueue.close(), renders.close()]));
  const tree = await flows.add({
    name: 'render',
    queueName: 'renders',
    children: [
      { name: 'step', queueName: 'steps', data: { n: 1 } },
      { name: 'step', queueName: 'steps', data: { n: 2 } },
    ],
  });
  const rootId = tree.job.id as string;
  const zkqRoot = await renders.getJob(rootId);
  assert.equal(await zkqRoot?.getState(), 'waiting-children');
  assert.deepEqual(await zkqRoot?.getDependenciesCount(), { processed: 0, unprocessed: 2, ignored: 0, failed: 0 });

  let parentSaw: Record<string, unknown> | undefined;
  const steps = new Worker('steps', async (job) => job.data.n * 10, env);
  const parents = new Worker(
    'renders',
    async (job) => {
      const values = await job.getChildrenValues();
      if (Object.keys(values).length === 2) {
        // BullMQ's Queue adds one more child to this running zkq job, which waits for it
        await bullQueue.add('late', {}, { parent: { id: job.id, queue: job.queueQualifiedName } });
        assert.equal(await job.moveToWaitingChildren(), true);
        throw new WaitingChildrenError();
      }
      parentSaw = values;
      return 'rendered';
    },
    env,
  );
  t.after(() => Promise.all([steps.close(), parents.close()]));
  await waitFor(
    async () =>
      (await renders.getJobCounts('waiting-children'))['waiting-children'] === 1 && (await bullQueue.count()) === 1,
    { timeoutMs: 20_000, what: 'the parent to wait for its late child' },
  );
  const late = new Worker('late', async () => 'late child', env);
  t.after(() => late.close());
  await waitFor(async () => (await renders.getJob(rootId))?.returnvalue === 'rendered', {
    timeoutMs: 20_000,
    what: 'the parent',
  });
  const [c1, c2] = (tree.children ?? []).map((c) => c.job.id);
  const [lateJob] = await bullQueue.getCompleted();
  assert.deepEqual(parentSaw, {
    [`${env.prefix}:steps:${c1}`]: 10,
    [`${env.prefix}:steps:${c2}`]: 20,
    [`${env.prefix}:late:${lateJob?.id}`]: 'late child',
  });
  assert.equal(await (await flows.getFlow({ id: rootId, queueName: 'renders' })).job.getState(), 'completed');
});
