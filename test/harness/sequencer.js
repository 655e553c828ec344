// Runs the longest e2e suites first, so that with several jest workers the last suite to start is a short
// one. Jest's default order is by recorded duration, and by file size on a fresh clone (CI), where the
// longest suites (the chaos run, the start script's kills) are among the smallest files.
const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Seconds each suite took in a local `.ci/run` on the 2-core machine (2026-12-02, the 2.41 lane on three
 * workers beside the queue and 1.x lanes: slower than CI's own machine, but in the same order), longest
 * first. Suites not named here run last.
 */
const SECONDS = {
	'startScript.test.ts': 888,
	'pollTrigger.test.ts': 815,
	'durableScheduleTrigger.test.ts': 745,
	'pollRunSettlement.test.ts': 571,
	'chaos.test.ts': 548,
	'roundTripWait.test.ts': 331,
	'pagination.test.ts': 292,
	'sftpSource.test.ts': 271,
	'sqlSource.test.ts': 212,
	'editor.test.ts': 178,
	'imapTriage.test.ts': 138,
	'examples.test.ts': 92,
	'credentials.test.ts': 53,
};

class LongestFirstSequencer extends Sequencer {
	sort(tests) {
		const seconds = (test) => SECONDS[basename(test.path)] ?? 0;
		return [...super.sort(tests)].sort((a, b) => seconds(b) - seconds(a));
	}
}

module.exports = LongestFirstSequencer;
