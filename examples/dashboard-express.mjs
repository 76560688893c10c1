// The zkq dashboard (bull-board) mounted in an existing Express app, beside
// its own routes.
//
//   npm run build && node examples/dashboard-express.mjs
//   open http://127.0.0.1:3000/admin/queues
//
// Uses the ZooKeeper at $ZKQ_ZK, or starts a private one for the run (with a
// queue and a few jobs to look at). Ctrl-C stops it.
import { createZooKeeperDashboard } from '@zkq/cli';
import { startZooKeeper } from '@zkq/testing';
import express from 'express';

const server = process.env.ZKQ_ZK ? undefined : await startZooKeeper();
const connectionString = process.env.ZKQ_ZK || server.connectionString;

if (server) {
  // Something to look at: a few jobs added through BullMQ's Queue on ZooKeeper.
  const { withBackend } = await import('bullmq');
  const { createZooKeeperBackend } = await import('@zkq/bullmq');
  const { Queue } = withBackend(createZooKeeperBackend);
  const queue = new Queue('emails', { connection: { connectionString } });
  await queue.add('welcome', { to: 'ada@example.com' });
  await queue.add('digest', { to: 'alan@example.com' }, { delay: 3_600_000 });
  await queue.close();
}

const basePath = '/admin/queues';
const dashboard = await createZooKeeperDashboard({
  connection: { connectionString, namespace: 'zkq' },
  basePath,
});

const app = express();
app.get('/', (_req, res) => res.send(`<a href="${basePath}">queues</a>`));
// Put your authentication in front of it, as for any admin page.
app.use(basePath, dashboard.router);
const http = app.listen(Number(process.env.PORT || 3000), '127.0.0.1', () =>
  console.log(`dashboard at http://127.0.0.1:${http.address().port}${basePath}`),
);

process.once('SIGINT', async () => {
  http.close();
  await dashboard.close();
  await server?.stop();
});
