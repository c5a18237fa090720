import type { WorkflowClient } from '@jobq/coordinator';
import { JobqError, type TaskFilter, type TaskRow, type WorkflowFilter, type WorkflowSummary } from '@jobq/ports';

/** Task rows matching `filter`, page after page, up to `limit` (0 = all); `more` when rows were left out. */
export async function collectTasks(
  client: WorkflowClient,
  filter: Omit<TaskFilter, 'limit' | 'continuationToken'>,
  limit = 0,
): Promise<{ items: TaskRow[]; more: boolean }> {
  const items: TaskRow[] = [];
  let token: string | null = null;
  do {
    const want = limit === 0 ? 1000 : Math.min(1000, limit - items.length + 1);
    const page = await client.tasks({ ...filter, limit: want, ...(token !== null ? { continuationToken: token } : {}) });
    items.push(...page.items);
    token = page.continuationToken;
    if (limit !== 0 && items.length > limit) return { items: items.slice(0, limit), more: true };
  } while (token !== null);
  return { items, more: false };
}

/** Workflows matching `filter`, page after page, up to `limit` (0 = all); `more` when some were left out. */
export async function collectWorkflows(
  client: Pick<WorkflowClient, 'list'>,
  filter: Omit<WorkflowFilter, 'limit' | 'continuationToken'>,
  limit = 0,
): Promise<{ items: WorkflowSummary[]; more: boolean }> {
  const items: WorkflowSummary[] = [];
  let token: string | null = null;
  do {
    const want = limit === 0 ? 1000 : Math.min(1000, limit - items.length + 1);
    const page = await client.list({ ...filter, limit: want, ...(token !== null ? { continuationToken: token } : {}) });
    items.push(...page.items);
    token = page.continuationToken;
    if (limit !== 0 && items.length > limit) return { items: items.slice(0, limit), more: true };
  } while (token !== null);
  return { items, more: false };
}

/** The `not-found` error for a workflow id, naming the deployment. */
export function workflowNotFound(workflowId: string, target: string): JobqError {
  return new JobqError('not-found', `workflow "${workflowId}" does not exist in ${target}`);
}

/** The index row of a workflow, or a `not-found` error naming the deployment. */
export async function requireWorkflow(client: WorkflowClient, workflowId: string, target: string): Promise<WorkflowSummary> {
  const summary = await client.status(workflowId);
  if (summary === null) throw workflowNotFound(workflowId, target);
  return summary;
}
