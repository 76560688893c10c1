/**
 * Log appends racing each other: several clients appending to one job's
 * log at once, a batch of appends of which some meet another writer and
 * others not, and an append whose reply was lost while another client
 * appended: every line lands once, in each writer's order.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { type LogOwner, QueueStore, readJobLogs, writeLogs } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { cleanups } from '../../helpers/cleanups.js';
import { OP, request } from '../../helpers/fault-proxy.js';
import { proxied, within } from '../../helpers/proxied-worker.js';
import { queueEnv } from '../../helpers/queue.js';
import { prefixSession } from '../../helpers/znodes.js';

/** The owners of jobs `ids` of queue `name`, added by a Queue (their records' czxids). */
async function owners(store: QueueStore, queue: Queue, ids: string[]): Promise<LogOwner[]> {
  await queue.addBulk(ids.map((id) => ({ name: 'logged', data: 0, opts: { jobId: id } })));
  return Promise.all(
    ids.map(async (id) => ({ id, czxid: (await store.session.getData(store.layout.job(id))).stat.czxid })),
  );
}

/** Whether `lines` holds each of `expected` once, and each writer's lines in its order. */
function assertOnceInOrder(lines: string[], expected: string[], what: string): void {
  assert.equal(lines.length, expected.length, `${what}: ${lines.length} lines for ${expected.length}`);
  assert.deepEqual([...lines].sort(), [...expected].sort(), `${what}: each line once`);
  const byWriter = new Map<string, number[]>();
  for (const line of lines) {
    const [writer, n] = line.split(':');
    byWriter.set(writer as string, [...(byWriter.get(writer as string) ?? []), Number(n)]);
  }
  for (const [writer, ns] of byWriter) {
    assert.deepEqual(
      ns,
      [...ns].sort((a, b) => a - b),
      `${what}: ${writer}'s lines in order`,
    );
  }
}

test('appends from several clients to one job, and batches of which one append meets them, each land once', async (t) => {
  const env = await queueEnv(t);
  const name = 'log-races';
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const stores = await Promise.all(
    Array.from({ length: 5 }, async () => new QueueStore(await prefixSession(t, env), name)),
  );
  const [hot, ...cold] = await owners(stores[0] as QueueStore, queue, ['hot', 'cold-a', 'cold-b']);
  const expected = new Map<string, string[]>([[hot?.id as string, []]]);
  for (const c of cold) expected.set(c.id, []);
  const lines = 12;
  // reads of the hot job's log node: more than its appends when some were planned again
  let reads = 0;
  for (const store of stores) {
    const getData = store.session.getData.bind(store.session);
    store.session.getData = ((path, o) => {
      if (path === store.layout.logs(hot?.id as string)) reads++;
      return getData(path, o);
    }) as typeof getData;
  }
  await Promise.all(
    stores.map(async (store, w) => {
      for (let n = 0; n < lines; n++) {
        const line = `w${w}:${n}`;
        if (w === 0) {
          // a batch: the hot job's append meets the other writers, the cold ones' do not
          const batch = [hot as LogOwner, ...cold].map((owner) => ({ owner, lines: [line] }));
          for (const b of batch) expected.get(b.owner.id)?.push(line);
          await writeLogs(store, batch);
        } else {
          expected.get(hot?.id as string)?.push(line);
          await writeLogs(store, [{ owner: hot as LogOwner, lines: [line] }]);
        }
      }
    }),
  );
  assert.ok(reads > stores.length * lines, `appends met each other (${reads} reads for ${stores.length * lines})`);
  for (const [id, want] of expected) {
    assertOnceInOrder((await readJobLogs(stores[0] as QueueStore, id))?.logs ?? [], want, `job ${id}`);
  }
});

test("an append whose reply was lost while another client appended is not written twice, nor the other's lost", async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const name = 'log-reply-lost';
  const queue = new Queue(name, env);
  defer(() => queue.close());
  const cut = await Session.connect({ ...via.connection, namespace: `/${env.prefix}` });
  defer(() => cut.close());
  const mine = new QueueStore(cut, name);
  const other = new QueueStore(await prefixSession(t, env), name);
  const [owner] = await owners(other, queue, ['j']);
  await writeLogs(other, [{ owner: owner as LogOwner, lines: ['other:0'] }]);
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, mine.layout.logs('j')), released);
  const late = writeLogs(mine, [{ owner: owner as LogOwner, lines: ['mine:0', 'mine:1'] }]);
  await within(lost.fired, 'the append sent');
  await writeLogs(other, [{ owner: owner as LogOwner, lines: ['other:1'] }]);
  reconnect();
  assert.deepEqual(await within(late, 'the lost append settled'), [3], 'the lines the node held after it');
  await writeLogs(mine, [{ owner: owner as LogOwner, lines: ['mine:2'] }]);
  assertOnceInOrder(
    (await readJobLogs(other, 'j'))?.logs ?? [],
    ['other:0', 'mine:0', 'mine:1', 'other:1', 'mine:2'],
    'job j',
  );
});
