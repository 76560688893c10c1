/**
 * A release reads its claim nodes in read-only multis whose replies stay
 * under ZooKeeper's packet limit: a claim node carries its attempt's
 * progress (up to 64 KB), and the release of a large batch read every node
 * in one request, its reply over the limit (40 nodes of 60 KB: 2.4 MB; a
 * client that checks replies, as ZooKeeper's own does, drops the connection
 * on it). All of them are released.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimJobs, lookAtHead, PACKET_LIMIT_BYTES, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

const CLAIMS = 40;
const PROGRESS_BYTES = 60 * 1024;

test('a release of many claims each holding large progress releases all of them', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('release-large', env);
  t.after(() => queue.close());
  const ids = Array.from({ length: CLAIMS }, (_, i) => `j${i}`);
  await queue.addBulk(ids.map((id) => ({ name: 'j', data: {}, opts: { jobId: id } })));
  const [mine, other] = [await prefixSession(t, env), await prefixSession(t, env)];
  const store = new QueueStore(mine, 'release-large');
  await store.init();
  const { layout } = store;
  for (const id of ids) await other.delete(layout.job(id)); // the pointers stay, the records go: not claimable
  const { candidates } = await lookAtHead(store, { limit: CLAIMS, exclude: [] });
  assert.equal(candidates.length, CLAIMS);

  // before the release reads them, each claim node grows to hold large progress (as renewals write it)
  const readMulti = mine.readMulti.bind(mine);
  const claimReads: { nodes: number; bytes: number }[] = [];
  let grown = false;
  mine.readMulti = (async (reads: Parameters<typeof readMulti>[0]) => {
    const release = reads.every((r) => r.path.startsWith(`${layout.claimsDir}/`));
    if (release) {
      if (!grown) {
        grown = true;
        for (const id of ids) {
          const path = layout.claim(id);
          const { data } = await other.getData(path);
          const info = { ...JSON.parse(data.toString()), progress: 'p'.repeat(PROGRESS_BYTES) };
          await other.setData(path, Buffer.from(JSON.stringify(info)));
        }
      }
    }
    const replies = await readMulti(reads);
    if (release) {
      // each read's data and the bytes the reply spends on it besides (its header and stat)
      const bytes = replies.reduce((sum, r) => sum + 96 + (r.ok && 'data' in r ? r.data.length : 0), 0);
      claimReads.push({ nodes: reads.length, bytes });
    }
    return replies;
  }) as typeof mine.readMulti;

  const result = await claimJobs(store, candidates, { workerId: 'mine', lockDuration: 600_000 });
  assert.deepEqual(result.claimed, []);
  assert.equal(result.skipped.length, CLAIMS);
  assert.ok(grown, 'the release read the claim nodes');
  t.diagnostic(`the release's reads of claim nodes: ${claimReads.map((r) => `${r.nodes} (${r.bytes} B)`).join(', ')}`);
  assert.equal(
    claimReads.reduce((sum, r) => sum + r.nodes, 0),
    CLAIMS,
    'each claim node read once',
  );
  for (const r of claimReads)
    assert.ok(r.bytes <= PACKET_LIMIT_BYTES, `a reply of ${r.bytes} B, at most ${PACKET_LIMIT_BYTES}`);
  const left = [];
  for (const id of ids) if (await other.exists(layout.claim(id))) left.push(id);
  assert.deepEqual(left, [], 'every claim released');
});
