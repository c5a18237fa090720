import { describe, expect, it } from '@jest/globals';
import { closestName, didYouMean, editDistance } from './suggest';

describe('editDistance', () => {
  it.each([
    ['', '', 0],
    ['abc', '', 3],
    ['', 'abc', 3],
    ['featurise', 'featurize', 1],
    ['depend_on', 'depends_on', 1],
    ['cdm', 'cmd', 1], // a swap counts one
    ['kitten', 'sitting', 3],
    ['command', 'cmd', 4],
  ])('%j → %j is %d', (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
    expect(editDistance(b, a)).toBe(d);
  });

  it('stops past the limit with limit + 1', () => {
    expect(editDistance('abcdefgh', 'zyxwvuts', 2)).toBe(3);
    expect(editDistance('a', 'abcdef', 2)).toBe(3);
    expect(editDistance('featurise', 'featurize', 1)).toBe(1);
  });
});

describe('closestName', () => {
  const tasks = ['prepare', 'featurize', 'train', 'evaluate'];

  it('suggests the nearest name within a third of its length', () => {
    expect(closestName('featurise', tasks)).toBe('featurize');
    expect(closestName('trian', tasks)).toBe('train');
    expect(closestName('Train', tasks)).toBe('train');
    expect(closestName('evaluation', tasks)).toBeUndefined();
    expect(closestName('deploy', tasks)).toBeUndefined();
  });

  it('never suggests the name itself, and prefers the first of equally near names', () => {
    expect(closestName('train', ['train'])).toBeUndefined();
    expect(closestName('ab', ['ac', 'ad'])).toBe('ac');
  });

  it('takes aliases and treats - as _', () => {
    expect(closestName('needs', ['depends_on'], { aliases: { needs: 'depends_on' } })).toBe('depends_on');
    expect(closestName('depends-on', ['depends_on'])).toBe('depends_on');
    expect(closestName('needs', ['depends_on'])).toBeUndefined();
  });

  it('for short candidates under strictUpTo, takes an inserted, dropped or swapped letter but not a changed one', () => {
    const kwargs = ['cmd', 'env', 'cwd'];
    expect(closestName('cmds', kwargs, { strictUpTo: 3 })).toBe('cmd');
    expect(closestName('cdm', kwargs, { strictUpTo: 3 })).toBe('cmd');
    expect(closestName('ev', kwargs, { strictUpTo: 3 })).toBe('env');
    expect(closestName('end', kwargs, { strictUpTo: 3 })).toBeUndefined();
    expect(closestName('end', kwargs)).toBe('env');
  });

  it('words the hint', () => {
    expect(didYouMean('depends_on')).toBe('did you mean "depends_on"?');
  });
});
