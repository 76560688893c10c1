// A queue, a worker and a few jobs, end to end.
//
//   npm run build && node examples/queue-and-worker.mjs
//
// Uses the ZooKeeper at $ZKQ_ZK, or starts a private one for the run.
import { Queue, QueueEvents } from '@zkq/producer';
import { startZooKeeper } from '@zkq/testing';
import { UnrecoverableError, Worker } from '@zkq/worker';

const server = process.env.ZKQ_ZK ? undefined : await startZooKeeper();
const connection = { connectionString: process.env.ZKQ_ZK || server.connectionString };
const prefix = `example-${process.pid}`;

const queue = new Queue('emails', { connection, prefix, defaultJobOptions: { attempts: 3, backoff: 100 } });
const events = new QueueEvents('emails', { connection, prefix });
await events.waitUntilReady();

const worker = new Worker(
  'emails',
  async (job) => {
    if (!job.data.to.includes('@')) throw new UnrecoverableError(`bad address ${job.data.to}`);
    await job.updateProgress(50);
    await job.log(`sending to ${job.data.to}`);
    return { sentAt: Date.now() };
  },
  { connection, prefix, concurrency: 4 },
);
worker.on('completed', (job) => console.log(`completed ${job.id} (${job.name} to ${job.data.to})`));
worker.on('failed', (job, err) => console.log(`failed ${job?.id}: ${err.message}`));

const welcome = await queue.add('welcome', { to: 'ada@example.com' });
await queue.addBulk([
  { name: 'digest', data: { to: 'grace@example.com' }, opts: { priority: 2 } },
  { name: 'digest', data: { to: 'not-an-address' } },
  { name: 'reminder', data: { to: 'alan@example.com' }, opts: { delay: 500 } },
]);

const result = await welcome.waitUntilFinished(events, 10_000);
console.log('welcome result:', result);
while ((await queue.getJobCounts('completed', 'failed')).completed < 3) await new Promise((r) => setTimeout(r, 50));
console.log('counts:', await queue.getJobCounts('completed', 'failed', 'waiting', 'delayed', 'active'));

await worker.close();
await events.close();
await queue.obliterate({ force: true });
await queue.close();
await server?.stop();
