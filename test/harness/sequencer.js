// Runs the longest e2e suites first, so that with two jest workers the last suite to start is a short
// one. Jest's default order is by recorded duration, and by file size on a fresh clone (CI), where the
// longest suites (the chaos run, the start script's kills) are among the smallest files.
const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/** Seconds each suite took in `.ci/run` on the 2-core machine (2026-12-01, three lanes), longest first. */
const SECONDS = {
	'startScript.test.ts': 686,
	'durableScheduleTrigger.test.ts': 431,
	'pollTrigger.test.ts': 338,
	'roundTripWait.test.ts': 276,
	'chaos.test.ts': 256,
	'pollRunSettlement.test.ts': 243,
	'editor.test.ts': 152,
	'imapTriage.test.ts': 138,
	'credentials.test.ts': 57,
	'examples.test.ts': 25,
};

class LongestFirstSequencer extends Sequencer {
	sort(tests) {
		const seconds = (test) => SECONDS[basename(test.path)] ?? 0;
		return [...super.sort(tests)].sort((a, b) => seconds(b) - seconds(a));
	}
}

module.exports = LongestFirstSequencer;
