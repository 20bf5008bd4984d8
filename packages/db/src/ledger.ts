// Filled in by its owner; see the module's header once written.
export {};
