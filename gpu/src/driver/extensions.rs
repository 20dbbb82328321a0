//! A keyed slot on each device for the state that layers above the driver
//! keep per device (compiled modules, kernels of an engine, records of
//! launches not yet checked): one value per type, made the first time it is
//! asked for. The driver stores the values without knowing their types, so
//! a device never depends on what runs on it.

use crate::driver::errors::poisoned;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use warpfit_runtime::{Error, Result};

/// One value, once made.
type Slot = Arc<Mutex<Option<Arc<dyn Any + Send + Sync>>>>;

/// The values, by type. Each type has a lock of its own, held while its
/// value is made, so that it is made once and a maker may ask for another
/// type's value.
#[derive(Default)]
pub(crate) struct Extensions {
    slots: Mutex<HashMap<TypeId, Slot>>,
}

impl Extensions {
    fn slot<E: Any>(&self) -> Result<Slot> {
        let mut slots = self.slots.lock().map_err(poisoned)?;
        Ok(slots.entry(TypeId::of::<E>()).or_default().clone())
    }

    /// The value of type `E`, made by `make` if there is none yet.
    pub(crate) fn get_or_make<E: Any + Send + Sync>(
        &self,
        make: impl FnOnce() -> Result<E>,
    ) -> Result<Arc<E>> {
        let slot = self.slot::<E>()?;
        let mut slot = slot.lock().map_err(poisoned)?;
        if let Some(value) = slot.as_ref() {
            return downcast(value.clone());
        }
        let value = Arc::new(make()?);
        *slot = Some(value.clone());
        Ok(value)
    }

    /// Sets the value of type `E`, replacing any.
    pub(crate) fn set<E: Any + Send + Sync>(&self, value: E) -> Result<()> {
        let slot = self.slot::<E>()?;
        *slot.lock().map_err(poisoned)? = Some(Arc::new(value));
        Ok(())
    }
}

/// A slot's value as its type (slots are keyed by it, so this cannot fail).
fn downcast<E: Any + Send + Sync>(value: Arc<dyn Any + Send + Sync>) -> Result<Arc<E>> {
    value.downcast::<E>().map_err(|_| Error::Cuda {
        context: "a device extension".into(),
        message: "holds a value of another type".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_is_made_once_and_kept() {
        let ext = Extensions::default();
        let a = ext.get_or_make(|| Ok(7u32)).unwrap();
        let b = ext.get_or_make::<u32>(|| panic!("made twice")).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let s = ext.get_or_make(|| Ok(String::from("other type"))).unwrap();
        assert_eq!(*s, "other type");
        ext.set(9u32).unwrap();
        assert_eq!(*ext.get_or_make::<u32>(|| Ok(0)).unwrap(), 9);
    }

    #[test]
    fn a_failed_make_leaves_the_slot_empty() {
        let ext = Extensions::default();
        assert!(ext
            .get_or_make::<u64>(|| Err(Error::invalid("no")))
            .is_err());
        assert_eq!(*ext.get_or_make(|| Ok(3u64)).unwrap(), 3);
    }

    #[test]
    fn a_maker_may_ask_for_another_type() {
        let ext = Extensions::default();
        let outer = ext
            .get_or_make(|| Ok(u64::from(*ext.get_or_make(|| Ok(5u32))?) + 1))
            .unwrap();
        assert_eq!(*outer, 6);
    }
}
