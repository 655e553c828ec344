import fc from 'fast-check';

import { at, simulate } from './n8n';
import { violations } from './properties';
import { describeSettings, type Scenario, scenarioArb } from './scenario';

/**
 * The seeded simulation of the Durable Schedule Trigger (issue 44): random schedules, settings,
 * run durations and failures, refusals, kills at any of n8n's steps, unpublishes, downtimes and
 * pruning, run against core/schedule/engine.ts through a model n8n (n8n.ts), and judged by the
 * guarantees (properties.ts). A failure is shrunk to a minimal scenario and told as a story.
 */

/** Runs the scenario; throws an Error telling its story when a guarantee is violated. */
export async function replayScheduleScenario(scenario: Scenario): Promise<void> {
	const observation = await simulate(scenario, true);
	const found = violations(observation);
	if (found.length > 0)
		throw new Error(story(scenario, observation.story, found, observation.cutoff));
}

/**
 * Checks `runs` random scenarios from `seed`. Throws an Error whose message is the shrunk
 * counterexample's story, the seed and the path to replay it.
 */
export async function checkScheduleModel(opts: {
	runs: number;
	seed: number;
	onProgress?: (done: number) => void;
}): Promise<void> {
	let done = 0;
	const property = fc.asyncProperty(scenarioArb, async (scenario) => {
		const observation = await simulate(scenario);
		if (++done % 100 === 0) opts.onProgress?.(done);
		return violations(observation).length === 0;
	});
	const result = await fc.check(property, {
		numRuns: opts.runs,
		seed: opts.seed,
		endOnFailure: false,
	});
	opts.onProgress?.(done);
	if (!result.failed) return;
	if (!result.counterexample)
		throw new Error(`schedule model, seed ${opts.seed}: ${String(result.errorInstance)}`);
	const [scenario] = result.counterexample;
	try {
		await replayScheduleScenario(scenario);
	} catch (error) {
		throw new Error(
			`${(error as Error).message}\n\nseed ${opts.seed}, path ${result.counterexamplePath} (npm run model -- --model schedule --runs ${opts.runs} --seed ${opts.seed}); scenario ${JSON.stringify(scenario)}`,
		);
	}
	throw new Error(
		`schedule model, seed ${opts.seed}: the counterexample passed when replayed (nondeterminism)`,
	);
}

/** The story up to the quiet end, then only what concerns the violated windows. */
function story(scenario: Scenario, lines: string[], found: string[], cutoff: number): string {
	// Times as the story shows them (at) and as run keys show them (ISO).
	const named = new Set(
		found.flatMap((line) => line.match(/\d\d-\d\d \d\d:\d\d:\d\dZ|\d{4}-[\d-]+T[\d:.]+Z/g) ?? []),
	);
	const quietFrom = lines.findIndex((line) => line.includes('from here on n8n stays up'));
	const before = quietFrom < 0 ? lines : lines.slice(0, quietFrom + 1);
	const after = quietFrom < 0 ? [] : lines.slice(quietFrom + 1);
	const relevant = after.filter(
		(line) => line.includes('VIOLATED') || [...named].some((time) => line.includes(time)),
	);
	return [
		`Durable Schedule Trigger model: ${found.length} guarantee(s) violated`,
		...found.map((line) => `  - ${line}`),
		`Settings: ${describeSettings(scenario)}; windows up to ${at(cutoff)} are judged.`,
		'Story:',
		...before.map((line) => `  ${line}`),
		...relevant.slice(0, 40).map((line) => `  ${line}`),
		...(after.length > relevant.length
			? [`  (${after.length - relevant.length} more lines of the quiet end left out)`]
			: []),
	].join('\n');
}
