"""The check interface: what a check kind is and what it receives (docs/architecture.md).

- `spec`: `CheckSpec`, the common fields of every entry, and building a kind's frozen spec;
- `interface`: `CheckKind`, the registry table type, mutation `Target` and `Verdict`;
- `context`: `GateContext`, what a check receives besides its spec (paths confined to the
  bundle, expected outputs, update mode, the registry in use);
- `parse`: an entry through its kind's schema (`GATE.SPEC.*`, `GATE.PATH.*`);
- `bundle`: bundle discovery and loading, every entry parsed (`DeclaredCheck`);
- `execute`: one declared check as the gate runs it (requirements, bindings, deadline);
- `negative`: the kind `negative_check`; `targets`: helpers for a target's evaluator.

The registry of every kind is `cbaudit.kinds`, above the oracles that declare them.
"""
