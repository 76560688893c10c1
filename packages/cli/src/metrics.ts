/**
 * Prometheus metrics of a worker daemon (`zkq worker --metrics-port`),
 * served as text at `/metrics`; `/healthz` answers 200 while connected to
 * ZooKeeper and 503 otherwise.
 *
 * zkq_zookeeper_connected follows the worker's own session when the Worker
 * exposes it (`worker.client`); otherwise it is derived from the worker's
 * events (ready and job activity: 1; a connection error: 0).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Session } from '@zkq/core';
import type { Queue } from '@zkq/producer';
import type { Worker } from '@zkq/worker';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds; jobs from a few ms to several minutes. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

const CONNECTION_ERROR_CODES = new Set([
  'ZK_CONNECTION_LOSS',
  'ZK_SESSION_EXPIRED',
  'ZK_REQUEST_TIMEOUT',
  'ZK_CONNECT_TIMEOUT',
  'ZK_SESSION_CLOSED',
]);

export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly started = new Map<string, number>();
  private readonly connected: Gauge;
  private server: Server | undefined;

  constructor(
    private readonly worker: Worker,
    depthQueue: Queue,
  ) {
    const labels = { queue: worker.name };
    const registers = [this.registry];
    this.registry.setDefaultLabels({ worker: worker.id });
    collectDefaultMetrics({ register: this.registry });
    const labelNames = ['queue'] as const;
    const completed = new Counter({
      name: 'zkq_jobs_completed_total',
      help: 'Jobs this worker completed',
      labelNames,
      registers,
    });
    const failed = new Counter({
      name: 'zkq_jobs_failed_total',
      help: 'Job attempts that failed on this worker',
      labelNames,
      registers,
    });
    const stalled = new Counter({
      name: 'zkq_jobs_stalled_total',
      help: 'Jobs found stalled (lease expired) by this worker',
      labelNames,
      registers,
    });
    const lost = new Counter({
      name: 'zkq_jobs_lost_total',
      help: 'Jobs this worker lost while running them (claim revoked; result dropped)',
      labelNames,
      registers,
    });
    const durationHist = new Histogram({
      name: 'zkq_job_duration_seconds',
      help: 'Time from claim to completion or failure of an attempt',
      labelNames: ['queue', 'status'] as const,
      buckets: DURATION_BUCKETS,
      registers,
    });
    const started = this.started;
    new Gauge({
      name: 'zkq_jobs_active',
      help: 'Jobs running on this worker now',
      labelNames,
      registers,
      collect() {
        this.set(labels, started.size);
      },
    });
    new Gauge({
      name: 'zkq_queue_depth',
      help: 'Waiting jobs of the queue (all workers), read at scrape time',
      labelNames,
      registers,
      async collect() {
        try {
          const counts = await depthQueue.getJobCounts('waiting');
          this.set(labels, counts.waiting ?? 0);
        } catch {
          // Keep the last value; zkq_zookeeper_connected tells why it is stale.
        }
      },
    });
    this.connected = new Gauge({
      name: 'zkq_zookeeper_connected',
      help: "1 while the worker's ZooKeeper session is connected, else 0",
      registers,
    });
    this.connected.set(0);
    for (const counter of [completed, failed, stalled, lost]) counter.inc(labels, 0);

    const finish = (id: string, status: 'completed' | 'failed') => {
      const t0 = started.get(id);
      started.delete(id);
      if (t0 !== undefined) durationHist.observe({ ...labels, status }, (performance.now() - t0) / 1000);
    };
    worker.on('active', (job) => {
      started.set(job.id, performance.now());
      this.markConnected(1);
    });
    worker.on('completed', (job) => {
      completed.inc(labels);
      finish(job.id, 'completed');
      this.markConnected(1);
    });
    worker.on('failed', (job) => {
      failed.inc(labels);
      if (job) finish(job.id, 'failed');
    });
    worker.on('stalled', () => stalled.inc(labels));
    worker.on('lost', (job) => {
      lost.inc(labels);
      started.delete(job.id);
    });
    worker.on('ready', () => {
      this.markConnected(1);
      void this.followSession();
    });
    worker.on('error', (err) => {
      if (CONNECTION_ERROR_CODES.has(String((err as { code?: unknown }).code))) this.markConnected(0);
    });
    worker.on('closed', () => this.markConnected(0));
  }

  private followingSession = false;

  private markConnected(value: 0 | 1): void {
    if (!this.followingSession) this.connected.set(value);
  }

  /** Uses the worker's own session state when the Worker exposes its session. */
  private async followSession(): Promise<void> {
    const client = (this.worker as unknown as { client?: Promise<Session> }).client;
    if (!client || typeof (client as Promise<Session>).then !== 'function') return;
    let session: Session;
    try {
      session = await client;
    } catch {
      return;
    }
    if (!session || typeof session.on !== 'function') return;
    this.followingSession = true;
    const set = (state: string) => this.connected.set(state === 'connected' || state === 'reconnected' ? 1 : 0);
    set(session.state);
    session.on('state', set);
  }

  /** Whether ZooKeeper is reachable as far as this worker knows. */
  async isConnected(): Promise<boolean> {
    const metric = await this.connected.get();
    return (metric.values[0]?.value ?? 0) === 1;
  }

  /** Serves `/metrics` and `/healthz`; resolves with the bound port. */
  listen(port: number, host: string): Promise<number> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
      } else if (path === '/metrics') {
        this.registry.metrics().then(
          (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
          (err) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
        );
      } else if (path === '/healthz') {
        void this.isConnected().then((ok) =>
          res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'not connected\n'),
        );
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('try /metrics\n');
      }
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}
