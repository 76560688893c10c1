/**
 * The text of `Queue.exportPrometheusMetrics`: BullMQ's metric names, help
 * lines and label layout, so dashboards built for BullMQ read it unchanged.
 */
import type { JobCounts } from '@zkq/core';

/** A label value escaped as Prometheus's text format wants it. */
export function escapeLabelValue(value: unknown): string {
  return String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function prometheusText(
  queue: string,
  counts: JobCounts,
  completed: number,
  failed: number,
  globalVariables?: Record<string, string>,
): string {
  const q = escapeLabelValue(queue);
  const extra = Object.entries(globalVariables ?? {})
    .map(([k, v]) => `, ${k}="${escapeLabelValue(v)}"`)
    .join('');
  return [
    '# HELP bullmq_job_count Number of jobs in the queue by state',
    '# TYPE bullmq_job_count gauge',
    ...Object.entries(counts).map(([state, n]) => `bullmq_job_count{queue="${q}", state="${state}"${extra}} ${n}`),
    '# HELP bullmq_job_completed_total Total number of completed jobs',
    '# TYPE bullmq_job_completed_total counter',
    `bullmq_job_completed_total{queue="${q}"${extra}} ${completed}`,
    '# HELP bullmq_job_failed_total Total number of failed jobs',
    '# TYPE bullmq_job_failed_total counter',
    `bullmq_job_failed_total{queue="${q}"${extra}} ${failed}`,
  ].join('\n');
}
