/**
 * A fault on the first idle worker must not hold the others asleep: idle
 * workers wait in line, only the first watches the head of the queue, so
 * whatever happens to the first one's link, session or process, jobs added
 * afterwards are claimed (by it, once back, or by the next in line).
 * Nobody polls in these tests (drainDelay 600 s), only watches wake, but
 * where the first one cannot act while its session lives on (a partition, a
 * dead process): there the one behind it must find out at its idle poll,
 * also when it came to stand there as the first one before left (it is
 * told: it watches the first too); and when the front of the line cannot
 * act as a whole, the ones further back find out at their session's
 * Backstop read (about every third of the session timeout, at most 10 s).
 */
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Session } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { expireSession, TcpProxy } from '@zkq/testing';
import { type RateLimiterOptions, Worker } from '@zkq/worker';
import { spawnFixture } from '../helpers/process.js';
import { type QueueTestEnv, queueEnv } from '../helpers/queue.js';
import { testSession, waitFor } from '../helpers/zk.js';

const WORKER = fileURLToPath(new URL('../fixtures/queue/worker-process.ts', import.meta.url));
const QUEUE = 'line';
const QUIET = { drainDelay: 600, housekeeping: false } as const;
/** Longer than any wait below: a worker whose session lingers would stall the test, not end it. */
const SESSION_MS = 30_000;
/** Generous: jobs are claimed within a second or so once anyone is awake. */
const CLAIMED_WITHIN_MS = 15_000;

interface Member {
  worker: Worker;
  proxy: TcpProxy;
  session: Session;
}

type Ctx = { name?: string; after(fn: () => unknown): void };

/** `n` workers, each behind a proxy of its own, all idle in line; `started` lists the jobs their processors began. */
async function idleWorkers(
  t: Ctx,
  n: number,
  env?: QueueTestEnv,
  drainDelay: number = QUIET.drainDelay,
  limiter?: RateLimiterOptions,
) {
  const e = env ?? (await queueEnv(t, SESSION_MS));
  const started: string[] = [];
  const members: Member[] = [];
  for (let i = 0; i < n; i++) {
    const proxy = await TcpProxy.start(e.connection.connectionString);
    const worker = new Worker(QUEUE, async (job) => void started.push(job.id), {
      ...e,
      ...QUIET,
      drainDelay,
      ...(limiter ? { limiter } : {}),
      connection: { ...e.connection, connectionString: proxy.connectionString },
      name: `w${i}`,
    });
    t.after(async () => {
      await worker.close(true);
      await proxy.stop();
    });
    await worker.waitUntilReady();
    members.push({ worker, proxy, session: await worker.client });
  }
  return { env: e, started, members };
}

/** The idle line's node names, in order. */
async function lineOf(look: Session): Promise<string[]> {
  const names = await look.getChildren(`/${QUEUE}/idle`).catch(() => [] as string[]);
  return names.sort((a, b) => Number(a.slice(-10)) - Number(b.slice(-10)));
}

function ownsNode(member: Member, node: string | undefined): boolean {
  return node?.startsWith(`w-${member.session.credentials().sessionId.toString('hex')}-`) === true;
}

/** Waits until all `count` are in line, and tells the first one. */
async function firstInLine(look: Session, members: Member[], count = members.length): Promise<Member> {
  let first: Member | undefined;
  await waitFor(
    async () => {
      const line = await lineOf(look);
      first = members.find((m) => ownsNode(m, line[0]));
      return line.length === count && first;
    },
    { what: `${count} workers idle in line` },
  );
  return first as Member;
}

/** Waits until all of `members` are in line, and tells them in its order. */
async function inLineOrder(look: Session, members: Member[]): Promise<Member[]> {
  return waitFor(
    async () => {
      const line = await lineOf(look);
      const order = line.map((node) => members.find((m) => ownsNode(m, node)));
      return line.length === members.length && order.every((m) => m !== undefined) ? (order as Member[]) : undefined;
    },
    { what: `${members.length} workers idle in line` },
  );
}

async function addThree(env: QueueTestEnv): Promise<void> {
  const queue = new Queue(QUEUE, env);
  try {
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'j', data: i })));
  } finally {
    await queue.close();
  }
}

async function allStarted(started: string[], timeoutMs = CLAIMED_WITHIN_MS): Promise<void> {
  await waitFor(() => new Set(started).size >= 3, { timeoutMs, what: 'the three jobs started' });
}

test('the first idle worker loses replies, then its connection: jobs added meanwhile and after are claimed', async (t) => {
  const { env, started, members } = await idleWorkers(t, 3);
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const first = await firstInLine(look, members);
  first.proxy.dropReplies();
  await addThree(env);
  await sleep(500);
  first.proxy.cut();
  first.proxy.restore();
  await allStarted(started);
  await waitFor(async () => (await lineOf(look)).length === 3, { what: 'everyone idle in line again' });
  started.length = 0;
  await addThree(env);
  await allStarted(started);
});

test('a reply to the first idle worker torn when its connection died: jobs added after are claimed', async (t) => {
  const { env, started, members } = await idleWorkers(t, 3);
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  await look.create('/pad', Buffer.alloc(2000));
  const first = await firstInLine(look, members);
  const torn = first.proxy.tearReplies();
  // a reply on its link to tear: most of it is still to come when the connection dies
  const read = first.session.getData('/pad').catch(() => undefined);
  await torn;
  first.proxy.cut();
  first.proxy.restore();
  await addThree(env);
  await allStarted(started);
  await read;
});

test('the first idle worker cut off by a partition while its session lives: the next in line claims at its idle poll', async (t) => {
  const env = await queueEnv(t, SESSION_MS);
  const { started, members } = await idleWorkers(t, 3, env, 1);
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const first = await firstInLine(look, members);
  first.proxy.freeze();
  try {
    await addThree(env);
    await allStarted(started);
  } finally {
    first.proxy.restore();
  }
});

test('the first idle worker’s session expires: jobs added after are claimed', async (t) => {
  const { env, started, members } = await idleWorkers(t, 3);
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const first = await firstInLine(look, members);
  await expireSession(env.connection.connectionString, first.session.credentials());
  await addThree(env);
  await allStarted(started);
});

test('the first idle worker’s process is killed: the next in line takes the jobs once its session ends', async (t) => {
  const env = await queueEnv(t, SESSION_MS);
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const victim = spawnFixture(WORKER, [
    JSON.stringify({
      connectionString: env.connection.connectionString,
      sessionTimeout: 2000,
      prefix: env.prefix,
      queue: QUEUE,
      housekeeping: false,
      drainDelay: 600,
    }),
  ]);
  t.after(() => victim.child.kill('SIGKILL'));
  await victim.waitForLine(/^ready$/);
  await waitFor(async () => (await lineOf(look)).length === 1, { what: 'the victim idle in line' });
  const { started } = await idleWorkers(t, 2, env);
  await waitFor(async () => (await lineOf(look)).length === 3, { what: 'everyone idle in line' });
  victim.child.kill('SIGKILL');
  await victim.exited;
  await addThree(env);
  await allStarted(started);
});

for (const limiter of [undefined, { max: 6, duration: 1000 }]) {
  const on = limiter ? 'a rate-limited queue' : 'a plain queue';
  test(`the first idle worker leaves and the new first one is cut off, on ${on}: the one now second in line claims at its idle poll`, async (t) => {
    const env = await queueEnv(t, SESSION_MS);
    const { started, members } = await idleWorkers(t, 4, env, 1, limiter);
    const look = await testSession(t, { namespace: `/${env.prefix}` });
    const [leaving, cutOff] = (await inLineOrder(look, members)) as [Member, Member];
    // The first leaves (as it does when it claims): the second becomes first; the third, which
    // watches only the second, is now right behind the first without being told.
    await leaving.worker.pause();
    await waitFor(
      async () => {
        const line = await lineOf(look);
        return line.length === 3 && ownsNode(cutOff, line[0]);
      },
      { what: 'the second idle worker first in line' },
    );
    cutOff.proxy.freeze();
    try {
      await addThree(env);
      // well before the session of the one cut off expires (SESSION_MS)
      await allStarted(started);
    } finally {
      cutOff.proxy.restore();
    }
  });
}

test('the first idle worker leaves and the new first one’s process is dead, its session alive: the one now second in line claims at its idle poll', async (t) => {
  const env = await queueEnv(t, SESSION_MS);
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const { members: first } = await idleWorkers(t, 1, env, 1);
  await waitFor(async () => (await lineOf(look)).length === 1, { what: 'the first worker idle in line' });
  const victim = spawnFixture(WORKER, [
    JSON.stringify({
      connectionString: env.connection.connectionString,
      sessionTimeout: SESSION_MS,
      prefix: env.prefix,
      queue: QUEUE,
      housekeeping: false,
      drainDelay: 1,
    }),
  ]);
  t.after(() => victim.child.kill('SIGKILL'));
  await victim.waitForLine(/^ready$/);
  await waitFor(async () => (await lineOf(look)).length === 2, { what: 'the victim idle in line, second' });
  const { started } = await idleWorkers(t, 2, env, 1);
  await waitFor(async () => (await lineOf(look)).length === 4, { what: 'everyone idle in line' });
  victim.child.kill('SIGKILL');
  await victim.exited;
  // The first leaves: the dead one is first now, for as long as its session lives.
  await (first[0] as Member).worker.pause();
  await waitFor(async () => (await lineOf(look)).length === 3, { what: 'the first worker out of line' });
  await addThree(env);
  await allStarted(started);
});

test('the first three idle workers cut off together (one host partitioned): the ones further back claim at their Backstop read', async (t) => {
  const env = await queueEnv(t, SESSION_MS);
  const { started, members } = await idleWorkers(t, 5, env, 1);
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  // the first cannot act, nor can its backup right behind it, nor the one that watches them both:
  // nobody is told, the line does not move
  const cut = (await inLineOrder(look, members)).slice(0, 3);
  for (const m of cut) m.proxy.freeze();
  try {
    await addThree(env);
    // before the sessions of the ones cut off expire (SESSION_MS): a Backstop read or two
    await allStarted(started, SESSION_MS - 5000);
  } finally {
    for (const m of cut) m.proxy.restore();
  }
});
