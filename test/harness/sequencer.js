// Runs the longest e2e suites first, so that with several jest workers the last suite to start is a short
// one. Jest's default order is by recorded duration, and by file size on a fresh clone (CI), where the
// longest suites (the chaos run, the start script's kills) are among the smallest files.
const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Seconds each suite took in stop 31's CI (2026-12-02, on CI's 2-core machine, the three lanes side by
 * side), longest first. The start script's two suites were one file there (1,111 s): split here as a
 * local run split it (the queue-mode case 592 of 987 s). Suites not named here run last.
 */
const SECONDS = {
	'startScriptQueue.test.ts': 670,
	'pollRunSettlement.test.ts': 484,
	'durableScheduleTrigger.test.ts': 477,
	'pollTrigger.test.ts': 454,
	'startScript.test.ts': 440,
	'chaos.test.ts': 306,
	'sftpSource.test.ts': 230,
	'pagination.test.ts': 207,
	'roundTripWait.test.ts': 204,
	'sqlSource.test.ts': 176,
	'imapTriage.test.ts': 113,
	'editor.test.ts': 111,
	'examples.test.ts': 104,
	'credentials.test.ts': 61,
	'foundation.test.ts': 19,
};

class LongestFirstSequencer extends Sequencer {
	sort(tests) {
		const seconds = (test) => SECONDS[basename(test.path)] ?? 0;
		return [...super.sort(tests)].sort((a, b) => seconds(b) - seconds(a));
	}
}

module.exports = LongestFirstSequencer;
