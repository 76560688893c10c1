import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { fourLetterWord, startZooKeeper } from '@zkq/testing';
import { Worker } from '@zkq/worker';

const server = await startZooKeeper();
const zk = server.connectionString;
const packets = async () => {
  const m = await fourLetterWord(Number(zk.split(':')[1]), 'mntr');
  const get = (k: string) => Number(new RegExp(`${k}\\s+(\\d+)`).exec(m)?.[1] ?? 0);
  return get('zk_packets_received') + get('zk_packets_sent');
};
const env = { connection: { connectionString: zk }, prefix: 'herd' };
const workers: Worker[] = [];
let done = 0;
for (let i = 0; i < 100; i++) {
  const w = new Worker('h', async () => { done++; }, { ...env, housekeeping: i === 0 });
  workers.push(w);
}
await Promise.all(workers.map((w) => w.waitUntilReady()));
const counts = new Map<string, number>();
let counting = false;
for (const w of workers) {
  const sess = (await w.client) as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const m of ['getChildren', 'getData', 'exists', 'multi', 'create', 'delete', 'createProtected', 'setData']) {
    const orig = sess[m]?.bind(sess);
    if (!orig) continue;
    sess[m] = (...a: unknown[]) => {
      if (counting) {
        const p = String((a[0] as { path?: string }[])[0]?.path ?? a[0]).replace(/\/\d+|[0-9a-f]{12,}|\d{10}/g, '#');
        const key = `${m} ${m === 'multi' ? (a[0] as unknown[]).length : p}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return orig(...a);
    };
  }
}
const q = new Queue('h', env);
await q.add('warm', {});
await sleep(3000);
let p0 = await packets();
await sleep(5000);
let p1 = await packets();
console.log('idle packets/s', ((p1 - p0) / 5).toFixed(1));
const reqs = async () => Promise.all(workers.map(async (w) => (await w.client).stats.requests));
const r0 = await reqs();
counting = true;
const qs0 = (await q.client).stats.requests;
p0 = await packets();
const n = 30;
for (let i = 0; i < n; i++) { await q.add('j', {}); await sleep(100); }
while (done < n + 1) await sleep(50);
await sleep(500);
p1 = await packets();
const r1 = await reqs();
counting = false;
for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(String(v / n).padStart(6), k);
const d = r1.map((v, i) => v - (r0[i] as number)).filter((x) => x > 0);
console.log('worker requests per job', (d.reduce((a, b) => a + b, 0) / n).toFixed(1), 'workers active', d.length, 'producer req/job', (((await q.client).stats.requests - qs0) / n).toFixed(1));
console.log('packets per job', ((p1 - p0) / n).toFixed(1), '(includes ~', (0.6 * 5).toFixed(0), 'idle packets/job)');
await q.close();
await Promise.all(workers.map((w) => w.close()));
await server.stop();
