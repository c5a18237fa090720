#!/usr/bin/env node
// The tasks of examples/node-script/workflow.yaml: one script, the step given as its argument.
//
//   node examples/node-script/task.js generate|square|sum   (only inside a workflow task)
//
// The helpers of `@jobq/task` read the environment the worker gives each task
// ($JOBQ_OUTPUT_FILE, $JOBQ_WORKFLOW_UPSTREAM_REFS, …): setOutput() writes this task's output,
// getUpstreamOutput(name) reads a parent's.
'use strict';
const path = require('node:path');

// In a project that depends on @jobq/task, a plain require finds the helpers. In this
// repository (a pnpm workspace) the root has no node_modules/@jobq, so they are resolved from the
// CLI's package (apps/jobq), which depends on @jobq/task. Like the CLI itself, that needs the
// workspace built (`pnpm build`).
function loadTaskHelpers() {
  try {
    return require('@jobq/task');
  } catch (error) {
    if (error.code !== 'MODULE_NOT_FOUND') throw error;
  }
  const cli = path.join(__dirname, '..', '..', 'apps', 'jobq');
  return require(require.resolve('@jobq/task', { paths: [cli] }));
}

const { getUpstreamOutput, setOutput } = loadTaskHelpers();

const steps = {
  async generate() {
    const numbers = [1, 2, 3, 4, 5];
    console.log(`generated ${numbers.length} numbers`);
    await setOutput({ numbers });
  },
  async square() {
    const { numbers } = await getUpstreamOutput('generate');
    const squares = numbers.map((n) => n * n);
    console.log(`squares: ${squares.join(', ')}`);
    await setOutput({ squares });
  },
  async sum() {
    const { numbers } = await getUpstreamOutput('generate');
    const { squares } = await getUpstreamOutput('square');
    const result = { count: numbers.length, sum: numbers.reduce((a, b) => a + b, 0), sum_of_squares: squares.reduce((a, b) => a + b, 0) };
    console.log(`sum ${result.sum}, sum of squares ${result.sum_of_squares}`);
    await setOutput(result);
  },
};

const step = steps[process.argv[2]];
if (step === undefined) {
  console.error(`usage: node examples/node-script/task.js ${Object.keys(steps).join('|')}`);
  process.exit(2);
}
step().catch((error) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
