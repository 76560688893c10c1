/**
 * The worker daemon's metrics server (`zkq worker --metrics-port`): the
 * library's worker metrics (`@zkq/worker/metrics`: job counters, durations,
 * running jobs, ZooKeeper connection, and the queue depth per state from the
 * queue's leader only) plus prom-client's process metrics, served as text at
 * `/metrics`; `/healthz` answers 200 while connected to ZooKeeper and 503
 * otherwise.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from '@zkq/worker';
import { type WorkerMetrics as LibraryMetrics, workerMetrics } from '@zkq/worker/metrics';
import { collectDefaultMetrics, Registry } from 'prom-client';

export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly metrics: LibraryMetrics;
  private server: Server | undefined;

  constructor(worker: Worker) {
    collectDefaultMetrics({ register: this.registry });
    this.metrics = workerMetrics(worker, { registry: this.registry });
  }

  /** Whether ZooKeeper is reachable as far as this worker knows. */
  async isConnected(): Promise<boolean> {
    return this.metrics.isConnected();
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
    this.metrics.stop();
    const server = this.server;
    this.server = undefined;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}
