import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  InvalidArgumentError,
  InvalidJobDataError,
  MAX_RECORD_BYTES,
  PayloadTooLargeError,
  Session,
  ZkqError,
} from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { Queue, QueueEvents } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

async function assertNothingAdded(queue: Queue): Promise<void> {
  const counts = await queue.getJobCounts();
  assert.equal(
    Object.values(counts).reduce((a, b) => a + b, 0),
    0,
    JSON.stringify(counts),
  );
}

test('oversized payloads are refused before they reach ZooKeeper, with the limit named', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('big', env);
  t.after(() => queue.close());
  const err = await queue.add('x', { blob: 'x'.repeat(MAX_RECORD_BYTES) }).catch((e) => e);
  assert.ok(err instanceof PayloadTooLargeError);
  assert.equal(err.code, 'ZKQ_PAYLOAD_TOO_LARGE');
  assert.equal(err.limit, MAX_RECORD_BYTES);
  assert.match(err.message, new RegExp(`${MAX_RECORD_BYTES}-byte limit`));
  const sized = await queue.add('x', 'abcdef', { sizeLimit: 4 }).catch((e) => e);
  assert.ok(sized instanceof PayloadTooLargeError);
  await assertNothingAdded(queue);
});

test('data JSON cannot carry faithfully is refused with a typed error naming where', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('json', env);
  t.after(() => queue.close());
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const cases: [unknown, RegExp][] = [
    [{ f: () => 1 }, /a function at data\.f/],
    [{ n: 10n }, /a BigInt at data\.n/],
    [cyclic, /circular reference at data\.self/],
    [{ list: [1, Number.NaN] }, /NaN at data\.list\[1\]/],
    [{ s: Symbol('x') }, /a symbol at data\.s/],
  ];
  for (const [data, message] of cases) {
    const err = await queue.add('x', data).catch((e) => e);
    assert.ok(err instanceof InvalidJobDataError, String(err));
    assert.equal(err.code, 'ZKQ_INVALID_JOB_DATA');
    assert.match(err.message, message);
  }
  // one bad job in a bulk: nothing is added
  const bulk = await queue
    .addBulk([
      { name: 'ok', data: 1 },
      { name: 'bad', data: { f: () => 1 } },
    ])
    .catch((e) => e);
  assert.ok(bulk instanceof InvalidJobDataError);
  // Dates are stored in their JSON form
  const dated = await queue.add('d', { at: new Date(0) });
  assert.equal((await queue.getJob(dated.id))?.data.at, '1970-01-01T00:00:00.000Z');
});

test('invalid names, options and connections get InvalidArgumentError naming the argument', async (t) => {
  const env = await queueEnv(t);
  for (const name of ['', 'a:b', '..', 'meta', 'x'.repeat(101), '\uD800']) {
    assert.throws(() => new Queue(name, env), InvalidArgumentError, `queue name ${JSON.stringify(name)}`);
  }
  assert.throws(
    () => new Queue('q', { connection: {} as never }),
    (e: unknown) => {
      return e instanceof InvalidArgumentError && e.argument === 'connection';
    },
  );
  assert.throws(() => new Worker('q', 42 as never, env), InvalidArgumentError);
  assert.throws(() => new Worker('q', async () => 1, { ...env, concurrency: 0 }), InvalidArgumentError);
  const queue = new Queue('opts', env);
  t.after(() => queue.close());
  const bad: [object, string][] = [
    [{ priority: -1 }, 'opts.priority'],
    [{ priority: 1.5 }, 'opts.priority'],
    [{ attempts: 0 }, 'opts.attempts'],
    [{ delay: -5 }, 'opts.delay'],
    [{ jobId: 'a/b' }, 'opts.jobId'],
    [{ jobId: '123' }, 'opts.jobId'],
    [{ backoff: { type: 'fixed', jitter: 2 } }, 'opts.backoff.jitter'],
    [{ removeOnComplete: -1 }, 'opts.removeOnComplete'],
  ];
  for (const [opts, argument] of bad) {
    const err = await queue.add('x', {}, opts).catch((e) => e);
    assert.ok(err instanceof InvalidArgumentError, `${JSON.stringify(opts)} -> ${err}`);
    assert.equal(err.argument, argument);
    assert.ok(err instanceof ZkqError && err.code === 'ZKQ_INVALID_ARGUMENT');
  }
  await assertNothingAdded(queue);
});

test('malformed and foreign nodes under the queue: moved to failed or skipped, the worker keeps going', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('mixed', env);
  t.after(() => queue.close());
  await queue.add('good', 1);
  const session = await queue.client;
  const layout = new QueueLayout('mixed');
  // a record that is not JSON, with a proper pointer
  await session.create(layout.job('garbage'), Buffer.from('{not json'));
  await session.create(`${layout.bucket('p-0000000000', 0)}/qn-garbage-`, undefined, 'persistent_sequential');
  // a foreign pointer with no record at all
  await session.create(`${layout.bucket('p-0000000000', 0)}/qn-nobody-`, undefined, 'persistent_sequential');
  await queue.add('good', 2);
  const warnings: Error[] = [];
  const seen: unknown[] = [];
  const worker = new Worker(
    'mixed',
    async (job) => {
      seen.push(job.data);
    },
    env,
  );
  worker.on('error', (e) => warnings.push(e));
  t.after(() => worker.close());
  await waitFor(() => seen.length === 2, { what: 'both good jobs ran' });
  assert.deepEqual(seen, [1, 2]);
  await waitFor(async () => (await queue.getJobCounts('failed')).failed === 1, { what: 'malformed job failed' });
  const quarantined = await queue.getJob('garbage');
  assert.match(quarantined?.failedReason ?? '', /not JSON/);
  assert.ok(warnings.some((w) => /malformed/.test(w.message)));
});

test('job ids . and .. are refused with InvalidArgumentError wherever a job id is taken', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('dots', env);
  t.after(() => queue.close());
  const events = new QueueEvents('dots', { ...env, autorun: false });
  t.after(() => events.close());
  const refused = (argument: string) => (e: unknown) => {
    assert.ok(e instanceof InvalidArgumentError, String(e));
    assert.equal(e.argument, argument);
    return true;
  };
  for (const id of ['.', '..']) {
    await assert.rejects(queue.add('x', {}, { jobId: id }), refused('opts.jobId'), `add with jobId ${id}`);
    await assert.rejects(queue.addBulk([{ name: 'x', data: {}, opts: { jobId: id } }]), refused('opts.jobId'));
  }
  for (const id of ['.', '..', '', 'a/b']) {
    await assert.rejects(queue.getJob(id), refused('jobId'), `getJob(${JSON.stringify(id)})`);
    await assert.rejects(queue.getJobState(id), refused('jobId'));
    await assert.rejects(queue.remove(id), refused('jobId'));
    await assert.rejects(events.waitJobFinished(id, 1000), refused('jobId'));
  }
  await assertNothingAdded(queue);
  const ok = await queue.add('x', {}, { jobId: '.a.' }); // dots inside an id are fine
  assert.equal((await queue.getJob(ok.id))?.id, '.a.');
});

test('a prefix at the root or under /zookeeper is refused at once, and nothing is written there', async (t) => {
  const env = await queueEnv(t);
  const root = await Session.connect({ connectionString: env.connection.connectionString });
  t.after(() => root.close());
  const before = (await root.getChildren('/zookeeper')).sort();
  for (const prefix of ['/', '//', 'zookeeper', '/zookeeper/quota', 'a//b', 'a/./b', 'a/..', '.', '']) {
    const opts = { ...env, prefix };
    const refused = (e: unknown) => e instanceof InvalidArgumentError && e.argument === 'prefix';
    assert.throws(() => new Queue('zookeeper', opts), refused, `Queue with prefix ${JSON.stringify(prefix)}`);
    assert.throws(
      () => new QueueEvents('zookeeper', opts),
      refused,
      `QueueEvents with prefix ${JSON.stringify(prefix)}`,
    );
  }
  assert.deepEqual((await root.getChildren('/zookeeper')).sort(), before);
  const nested = new Queue('fine', { ...env, prefix: `${env.prefix}/nested/` });
  t.after(() => nested.close());
  await nested.add('x', {});
  assert.ok(await root.exists(`/${env.prefix}/nested/fine/meta`));
});

test("queue names _locks and _barriers are reserved: they are the CLI's lock and barrier roots", async (t) => {
  const env = await queueEnv(t);
  for (const name of ['_locks', '_barriers']) {
    assert.throws(
      () => new Queue(name, env),
      (e: unknown) => e instanceof InvalidArgumentError && e.argument === 'name',
    );
  }
  const queue = new Queue('locks', env); // the old CLI root's name is an ordinary queue again
  t.after(() => queue.close());
  await queue.add('x', {});
  assert.equal((await queue.getJobCounts('waiting')).waiting, 1);
});
