import htm from 'htm';
import { h, type VNode } from 'preact';

/** Tagged templates for Preact (no JSX step): text interpolated into them is always text, never HTML. */
export const html = htm.bind(h) as (strings: TemplateStringsArray, ...values: unknown[]) => VNode;
