import { Args, Flags } from '@oclif/core';
import { SUBMIT_ID_PATTERN, type SubmitManyResult } from '@jobq/coordinator';
import type { WorkflowDefinition } from '@jobq/dag-core';
import { formatElapsed, listSome } from '@jobq/ports';
import { JobqCommand, errorLine } from '../../base';
import { openDeployment } from '../../deployment';
import { ReportedFailure, UsageError } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';
import { fractionBar } from '../../format';
import type { SubmitResultJson } from '../../json-output';
import { readStdin } from '../../io';
import { paramFlags, paramOverrides } from '../../params';
import { printDiagnostics } from '../../diagnostics';
import { loadWorkflowFile, type LoadedWorkflow } from '../../workflow-file';

/** `R roots: a, b, c and K more` */
function rootsText(definition: WorkflowDefinition): string {
  const roots = definition.tasks.filter((t) => t.dependsOn.length === 0 && (t.gates ?? []).length === 0).map((t) => t.name);
  return `${roots.length} root${roots.length === 1 ? '' : 's'}: ${listSome(roots, 3)}`;
}

type Loaded = Extract<LoadedWorkflow, { ok: true }>;

export default class WorkflowSubmit extends JobqCommand {
  static override traced = true;

  static override summary = 'Submit workflow files to the deployment';
  static override description =
    'Reads, parses and validates every file first (YAML or JSON; with no FILES, one path per line is read from stdin), ' +
    'its parameters resolved (--param, --params-file apply to every file) and its matrix tasks expanded: the resolved definition is what is stored; ' +
    'any invalid file aborts with exit 1 before anything is written. Then each workflow is submitted: its runtime and index row ' +
    'are written and the coordinator is woken. The workflow ids are printed on stdout, one per line in the order of the files ' +
    '(an empty line for a workflow whose submit failed); a progress bar (when stderr is a terminal) and a summary go to stderr. ' +
    'Resubmitting the same definition under the same --id is a no-op; a different definition under an existing id is an error. ' +
    'Exits 1 when any submit failed.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject submit examples/diamond.yaml',
    '<%= config.bin %> workflow submit pipeline.yaml --id nightly-2024-06-01',
    'ls dags/*.yaml | <%= config.bin %> workflow submit --concurrency 50',
    '<%= config.bin %> workflow submit big.yaml --max-fan-in 1000 --json',
    '<%= config.bin %> workflow submit sweep.yaml --param lr=0.01 --params-file nightly.yaml',
  ];
  static override strict = false;
  static override args = {
    files: Args.string({
      description: 'Workflow files (YAML or JSON); read from stdin, one per line, when none are given',
      ignoreStdin: true,
    }),
  };
  static override flags = {
    ...configFlags,
    id: Flags.string({
      description: 'Workflow id (only with one file): 1–128 of [A-Za-z0-9._-], starting with a letter or digit; default a random 32-hex id',
    }),
    'max-fan-in': Flags.integer({ description: 'Split dependency lists longer than this into chained merge batches (≥ 2)', min: 2 }),
    ...paramFlags,
    concurrency: Flags.integer({ description: 'Submits in flight at once', default: 20, min: 1, max: 1000 }),
    json: Flags.boolean({ description: 'Print one JSON document with the ids and the result of every file', default: false }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(WorkflowSubmit);
    let files = argv as string[];
    if (files.length === 0) {
      if (process.stdin.isTTY) throw new UsageError('no workflow files given: pass FILES, or pipe paths on stdin (one per line)');
      files = (await readStdin())
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter((line) => line !== '');
      if (files.length === 0) throw new UsageError('no workflow files given: stdin held no paths');
    }
    if (flags.id !== undefined) {
      if (files.length !== 1) throw new UsageError(`--id needs exactly one workflow file, got ${files.length}`);
      if (!SUBMIT_ID_PATTERN.test(flags.id)) {
        throw new UsageError(
          `--id ${JSON.stringify(flags.id)} is not valid: use 1–128 letters, digits, ".", "_" or "-", starting with a letter or digit`,
        );
      }
    }
    const config = configFromFlags(flags);

    const params = paramOverrides(flags);
    if (!params.ok) {
      printDiagnostics([params.report]);
      throw new ReportedFailure(`${flags['params-file']} is not a valid params file: nothing was submitted`);
    }
    const loaded = files.map((file) => loadWorkflowFile(file, flags['max-fan-in'], params.overrides));
    printDiagnostics(loaded);
    const invalid = loaded.filter((r) => !r.ok);
    if (invalid.length > 0) {
      const line = `${invalid.length} of ${files.length} workflow file(s) are invalid: nothing was submitted`;
      this.note(`jobq: ${line}`);
      throw new ReportedFailure(line, 1, 'invalid_workflow');
    }
    const workflows = loaded as Loaded[];

    const deployment = await openDeployment(config);
    const progress = process.stderr.isTTY && workflows.length > 1 ? new ProgressLine(workflows.length) : null;
    const results: SubmitManyResult[] = await deployment.client.submitMany(
      workflows.map((w) => ({ definition: w.definition, ...(flags.id !== undefined ? { id: flags.id } : {}) })),
      {
        concurrency: flags.concurrency,
        onProgress: (done, _total, result) => progress?.update(done, result.ok ? 0 : 1),
      },
    );
    progress?.done();

    let ok = 0;
    let tasks = 0;
    const out: SubmitResultJson[] = [];
    results.forEach((result, i) => {
      const w = workflows[i]!;
      if (result.ok) {
        ok++;
        tasks += w.definition.tasks.length;
        out.push({
          file: w.path,
          ok: true,
          workflow_id: result.workflowId,
          created: result.created,
          name: w.definition.name,
          tasks: w.definition.tasks.length,
        });
      } else {
        this.note(`jobq: ${w.path}: ${errorLine(result.error)}`);
        out.push({ file: w.path, ok: false, error: errorLine(result.error) });
      }
    });
    const ids = results.map((r) => (r.ok ? r.workflowId : null));

    if (flags.json) {
      this.printJson({
        target: deployment.target,
        total: workflows.length,
        submitted: ok,
        failed: workflows.length - ok,
        tasks,
        ids,
        results: out,
      });
    } else {
      for (const id of ids) process.stdout.write(`${id ?? ''}\n`);
    }

    const only = workflows.length === 1 ? workflows[0] : undefined;
    const first = results[0];
    if (only && first?.ok) {
      const n = only.definition.tasks.length;
      const again = first.created ? '' : ' (already submitted with this definition: nothing written)';
      this.note(
        `Submitted "${only.definition.name}" (${n} task${n === 1 ? '' : 's'}, ${rootsText(only.definition)}) to ${deployment.target} → ${first.workflowId}${again}`,
      );
    } else {
      this.note(`Submitted ${ok}/${workflows.length} workflows (${tasks} tasks) to ${deployment.target}`);
    }
    if (ok < workflows.length) throw new ReportedFailure(`${workflows.length - ok} submit(s) failed`);
  }
}

/** A one-line progress bar on stderr (used only when stderr is a terminal). */
class ProgressLine {
  private readonly started = Date.now();
  private errors = 0;
  private lastDrawn = 0;

  constructor(private readonly total: number) {
    this.draw(0);
  }

  update(done: number, failed: number): void {
    this.errors += failed;
    const now = Date.now();
    if (done < this.total && now - this.lastDrawn < 100) return;
    this.lastDrawn = now;
    this.draw(done);
  }

  done(): void {
    process.stderr.write('\r\x1b[2K');
  }

  private draw(done: number): void {
    const elapsed = Date.now() - this.started;
    const remaining = done === 0 ? '?' : formatElapsed((elapsed / done) * (this.total - done), { seconds: true });
    process.stderr.write(
      `\r\x1b[2KSubmitting ${fractionBar(done, this.total, 30)} ${done}/${this.total}  ${formatElapsed(elapsed, { seconds: true })} elapsed, ${remaining} left  ${this.errors} err`,
    );
  }
}
