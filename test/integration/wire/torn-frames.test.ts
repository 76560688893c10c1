/**
 * Connections cut in the middle of a packet, each way (a request torn on its
 * way to the server, a reply torn on its way back), at offsets inside the
 * length prefix, the header and the body, while creates, reads, read-only
 * multis and write multis are in flight. Each request ends (no hang), never
 * with another's reply: a create resolves to its own path, a read to its own
 * node's data; nothing is thrown from the wire layer (the test runner fails
 * on an uncaught exception).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import { testSession } from '../../helpers/zk.js';

const NODES = 6;
/** Offsets into the next chunk: in the length prefix, the header, the body, deep in a large reply. */
const KEEPS = [1, 3, 4, 6, 11, 17, 25, 60, 700, 5000];
const ROUND_DEADLINE_MS = 60_000;

/** Node data that says whose it is, large enough for a reply to span chunks. */
const dataOf = (name: string) => Buffer.from(`${name}:`.repeat(400));

async function settledWithin<T>(promises: Promise<T>[], what: string): Promise<PromiseSettledResult<T>[]> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: requests still pending after ${ROUND_DEADLINE_MS} ms`)),
      ROUND_DEADLINE_MS,
    );
  });
  try {
    return await Promise.race([Promise.allSettled(promises), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

for (const way of ['up', 'down'] as const) {
  test(`connections cut mid-packet ${way === 'up' ? 'towards the server' : 'towards the client'}: every request ends, with its own reply`, async (t) => {
    const proxy = await TcpProxy.start(await sharedZooKeeper());
    t.after(() => proxy.stop());
    const s = await testSession(t, { connectionString: proxy.connectionString, sessionTimeout: 15_000 });
    for (let i = 0; i < NODES; i++) await s.create(`/d${i}`, dataOf(`d${i}`));
    const sessionId = s.sessionId;
    for (const [round, keep] of KEEPS.entries()) {
      const cut = proxy.cutMidway(way, keep);
      const checks: Promise<void>[] = [];
      for (let i = 0; i < NODES; i++) {
        const created = `/c${round}-${i}`;
        checks.push(s.create(created, dataOf(created)).then((path) => assert.equal(path, created)));
        checks.push(
          s
            .getData(`/d${i}`)
            .then(({ data }) => assert.ok(data.equals(dataOf(`d${i}`)), `getData /d${i} read its own node`)),
        );
        const other = (i + 1) % NODES;
        checks.push(
          s.readMulti([{ op: 'getData', path: `/d${other}` }] as const).then(([r]) => {
            assert.ok(r && 'data' in r && r.data.equals(dataOf(`d${other}`)), `readMulti /d${other} read its own node`);
          }),
        );
        const multi = `/m${round}-${i}`;
        checks.push(
          s.multi([{ op: 'create', path: multi, data: dataOf(multi) }]).then(([r]) => {
            assert.equal(r && 'path' in r ? r.path : undefined, multi);
          }),
        );
      }
      const results = await settledWithin(checks, `keep ${keep}`);
      for (const r of results) {
        if (r.status === 'rejected') assert.ok(!(r.reason instanceof assert.AssertionError), String(r.reason));
      }
      await cut;
      for (let i = 0; i < NODES; i++) {
        for (const path of [`/c${round}-${i}`, `/m${round}-${i}`]) {
          const written = await s.getData(path).catch(() => undefined);
          if (written) assert.ok(written.data.equals(dataOf(path)), `${path} holds its own data`);
        }
      }
    }
    // each next connection read clean from its first byte: the same session resumed every time
    assert.equal(s.sessionId, sessionId);
    assert.equal(s.stats.sessionsCreated, 1);
  });
}
