// Runs the longest e2e suites first, so that with several jest workers the last suite to start is a short
// one. Jest's default order is by recorded duration, and by file size on a fresh clone (CI), where the
// longest suites (the chaos run, the start script's kills) are among the smallest files.
const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Seconds each suite took in `.ci/run` on the 2-core machine (2026-12-01, three lanes; the suites added
 * that day from the helpers' runs), longest first. Suites not named here run last.
 */
const SECONDS = {
	'startScript.test.ts': 765,
	'durableScheduleTrigger.test.ts': 527,
	'pollTrigger.test.ts': 478,
	'pollRunSettlement.test.ts': 429,
	'chaos.test.ts': 420,
	'roundTripWait.test.ts': 262,
	'pagination.test.ts': 250,
	'sftpSource.test.ts': 220,
	'sqlSource.test.ts': 190,
	'editor.test.ts': 174,
	'imapTriage.test.ts': 162,
	'examples.test.ts': 80,
	'credentials.test.ts': 58,
};

class LongestFirstSequencer extends Sequencer {
	sort(tests) {
		const seconds = (test) => SECONDS[basename(test.path)] ?? 0;
		return [...super.sort(tests)].sort((a, b) => seconds(b) - seconds(a));
	}
}

module.exports = LongestFirstSequencer;
