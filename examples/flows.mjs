// A flow: a parent job that runs once its children, in two queues, are done.
//
//   npm run build && node examples/flows.mjs
//
// Uses the ZooKeeper at $ZKQ_ZK, or starts a private one for the run.
import { FlowProducer, Queue, QueueEvents } from '@zkq/producer';
import { startZooKeeper } from '@zkq/testing';
import { WaitingChildrenError, Worker } from '@zkq/worker';

const server = process.env.ZKQ_ZK ? undefined : await startZooKeeper();
const connection = { connectionString: process.env.ZKQ_ZK || server.connectionString };
const prefix = `example-flows-${process.pid}`;

const flows = new FlowProducer({ connection, prefix });
const audits = new Queue('returns', { connection, prefix });
const events = new QueueEvents('reports', { connection, prefix });
await events.waitUntilReady();

// Children run first: one per region, in the `sales` queue, and a summary of returns in `returns`.
const total = (amounts) => amounts.reduce((a, b) => a + b, 0);
const sales = new Worker('sales', async (job) => ({ region: job.data.region, total: total(job.data.amounts) }), {
  connection,
  prefix,
  concurrency: 4,
});
const returns = new Worker('returns', async (job) => job.data.count, { connection, prefix });

// The parent runs once every child is done, and reads their results. A `followUp` report adds one
// more child while it runs and waits for it too: moveToWaitingChildren, then WaitingChildrenError.
const reporter = new Worker(
  'reports',
  async (job) => {
    let values = Object.values(await job.getChildrenValues());
    if (job.data.followUp && values.length === 3) {
      await audits.add('audit', { count: 1 }, { parent: { id: job.id, queue: 'reports' } });
      if (await job.moveToWaitingChildren()) throw new WaitingChildrenError(); // runs again once it is done
      values = Object.values(await job.getChildrenValues()); // false: the audit was done already
    }
    const regions = values.filter((v) => typeof v === 'object').map((v) => `${v.region} ${v.total}`);
    const returned = values.filter((v) => typeof v === 'number').reduce((a, b) => a + b, 0);
    return `${regions.sort().join(', ')}; ${returned} returned`;
  },
  { connection, prefix },
);

const { job, children } = await flows.add({
  name: 'weekly',
  queueName: 'reports',
  data: { followUp: true },
  children: [
    { name: 'region', queueName: 'sales', data: { region: 'north', amounts: [120, 80] } },
    { name: 'region', queueName: 'sales', data: { region: 'south', amounts: [50] } },
    { name: 'returns', queueName: 'returns', data: { count: 2 } },
  ],
});
console.log(`added parent ${job.id} (${await job.getState()}) with ${children.length} children`);
console.log('children:', children.map((c) => `${c.job.queueName}:${c.job.id}`).join(' '));

console.log('report:', await job.waitUntilFinished(events, 20_000));
console.log('dependencies:', await job.getDependenciesCount());

await Promise.all([sales.close(), returns.close(), reporter.close()]);
await events.close();
for (const name of ['reports', 'sales', 'returns']) {
  const queue = new Queue(name, { connection, prefix });
  await queue.obliterate({ force: true });
  await queue.close();
}
await flows.close();
await audits.close();
await server?.stop();
