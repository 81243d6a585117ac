#include "reconcile.hpp"
