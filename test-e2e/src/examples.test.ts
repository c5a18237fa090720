import { describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { EXAMPLES, runCli } from './cli';

interface RunReport {
  workflow_id: string;
  name: string;
  status: string;
  tasks: Array<{ name: string; status: string; attempt_no: number; queue: string; error: string | null; output: unknown }>;
}

describe('examples through `jobq workflow run` (embedded stack)', () => {
  it('diamond.yaml: the four tasks complete and compare picks the better model', async () => {
    const result = await runCli(['workflow', 'run', join(EXAMPLES, 'diamond.yaml'), '--json']);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as RunReport;
    expect(report.status).toBe('completed');
    expect(report.tasks.map((t) => [t.name, t.status])).toEqual([
      ['featurize', 'completed'],
      ['train-gnn', 'completed'],
      ['train-rf', 'completed'],
      ['compare', 'completed'],
    ]);
    expect(report.tasks.find((t) => t.name === 'compare')?.output).toEqual({ best: 'gnn', accuracy: 0.91 });
  });
});
