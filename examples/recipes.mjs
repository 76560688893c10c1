// The coordination recipes on their own: a lock, a leader election and a barrier.
//
//   npm run build && node examples/recipes.mjs
import { Barrier, LeaderElection, Lock, Session } from '@zkq/core';
import { startZooKeeper } from '@zkq/testing';

const server = process.env.ZKQ_ZK ? undefined : await startZooKeeper();
const connectionString = process.env.ZKQ_ZK || server.connectionString;
const namespace = `/recipes-example-${process.pid}`;
const sessions = await Promise.all([1, 2, 3].map(() => Session.connect({ connectionString, namespace })));

// Exclusive lock: three contenders, one at a time.
let inside = 0;
await Promise.all(
  sessions.map(async (session, i) => {
    const lock = new Lock(session, '/locks/report');
    await lock.acquire({ timeout: 10_000 });
    inside++;
    console.log(`lock: contender ${i} holds it (holders now: ${inside})`);
    inside--;
    await lock.release();
  }),
);

// Leader election: the first to join leads; its fence() guards its writes.
const elections = sessions.map((s, i) => new LeaderElection(s, '/election', { id: `node-${i}` }));
for (const e of elections) await e.start();
await elections[0].waitUntilLeader({ timeout: 10_000 });
console.log('election: leader is', await elections[1].leader());
await sessions[0].multi([elections[0].fence(), { op: 'create', path: '/written-by-leader' }]);

// Barrier: nobody passes until all three have joined.
await Promise.all(
  sessions.map(async (s, i) => {
    await new Barrier(s, '/barriers/start', { size: 3, id: `m${i}` }).enter({ timeout: 10_000 });
    console.log(`barrier: member ${i} passed`);
  }),
);

for (const e of elections) await e.close();
await sessions[0].deleteRecursive('/');
await Promise.all(sessions.map((s) => s.close()));
await server?.stop();
